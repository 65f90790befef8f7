"""Typed keys for what the application and each request carry (aiohttp's AppKey and RequestKey)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from proxy.engine.state.budget import GcAccounting
from proxy.http.metrics import Metrics
from proxy.http.rundir import Worker
from proxy.http.stalls import Watch
from proxy.http.tenancy import Runtime, Team
from proxy.http.upstream import Timeouts
from proxy.store import VerdictStore
from proxy.store.health import StoreHealth

__all__ = [
    "CONTEXT",
    "GC",
    "METRICS",
    "REQUEST_LOG",
    "RUNTIME",
    "SESSION",
    "STORES",
    "WORKER",
    "Context",
    "RequestLog",
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
"""The synchronous steps lately run on the event loop (see `http.stalls`)."""
SESSION = web.AppKey("session", aiohttp.ClientSession)


@dataclass(slots=True)
class RequestLog:
    """What the one log line of a request says; filled in as the request goes."""

    started: float = field(default_factory=time.perf_counter)
    upstream_ms: float | None = None
    overhead_ms: float = 0.0
    conversation: str | None = None
    team: str = "default"
    analysed: bool = False
    trips: tuple[str, ...] = ()
    end: str = "complete"


@dataclass(frozen=True, slots=True)
class Context:
    """What a request runs under, fixed when it arrives (a reload does not change it)."""

    runtime: Runtime
    team: Team

    @property
    def timeouts(self) -> Timeouts:
        upstream = self.runtime.settings.upstream
        return Timeouts(upstream.connect_timeout, upstream.first_byte_timeout, upstream.idle_timeout)


REQUEST_LOG = web.RequestKey("request_log", RequestLog)
CONTEXT = web.RequestKey("context", Context)
