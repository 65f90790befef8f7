"""Typed keys for what the application and each request carry (aiohttp's AppKey and RequestKey)."""

from __future__ import annotations

from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from proxy.engine.state.budget import GcAccounting
from proxy.http.observe.metrics import Metrics
from proxy.http.observe.record import Record
from proxy.http.runtime.catchup import CatchUps
from proxy.http.runtime.rundir import Worker
from proxy.http.runtime.stalls import Watch
from proxy.http.runtime.tenancy import Runtime, Team
from proxy.store import VerdictStore
from proxy.store.health import StoreHealth

__all__ = [
    "CATCH_UPS",
    "CONTEXT",
    "GC",
    "METRICS",
    "RECORD",
    "RUNTIME",
    "SESSION",
    "STALLS",
    "STORES",
    "WORKER",
    "Context",
    "RuntimeHolder",
    "Stores",
]


@dataclass(slots=True)
class RuntimeHolder:
    """The runtime in force; a reload swaps `current`, requests in flight keep the one they began with."""

    current: Runtime


@dataclass(slots=True)
class Stores:
    """Durable stores opened for the app's lifetime."""

    verdicts: VerdictStore | None = None
    health: StoreHealth = field(default_factory=StoreHealth)
    """The verdict store's (`off` while there is none)."""


RUNTIME = web.AppKey("runtime", RuntimeHolder)
WORKER = web.AppKey("worker", Worker)
GC = web.AppKey("gc", GcAccounting)
"""Garbage-collection time per thread, kept off the analysis budget."""
STORES = web.AppKey("stores", Stores)
METRICS = web.AppKey("metrics", Metrics)
STALLS = web.AppKey("stalls", Watch)
"""The requests in flight, looked at for the steps that held the event loop (see `runtime.stalls`)."""
SESSION = web.AppKey("session", aiohttp.ClientSession)
CATCH_UPS = web.AppKey("catch_ups", CatchUps)
"""Conversations first seen long, read beside the traffic (`runtime.catchup`)."""


@dataclass(frozen=True, slots=True)
class Context:
    """What a request runs under, fixed when it arrives (a reload does not change it)."""

    runtime: Runtime
    team: Team


RECORD = web.RequestKey("record", Record)
"""What the request did, observed once it is over (`observe.observer`)."""
CONTEXT = web.RequestKey("context", Context)
