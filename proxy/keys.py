"""Typed keys for what the application and each request carry."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from proxy.metrics import Metrics
from proxy.store import VerdictStore
from proxy.tenancy import Runtime

__all__ = ["METRICS", "REQUEST_LOG", "RUNTIME", "SESSION", "STORES", "RequestLog", "RuntimeHolder", "Stores"]


@dataclass(slots=True)
class RuntimeHolder:
    """The runtime in force; a reload swaps `current`, requests in flight keep the one they began with."""

    current: Runtime


@dataclass(slots=True)
class Stores:
    """Durable stores opened for the app's lifetime."""

    verdicts: VerdictStore | None = None


RUNTIME = web.AppKey("runtime", RuntimeHolder)
STORES = web.AppKey("stores", Stores)
METRICS = web.AppKey("metrics", Metrics)
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


REQUEST_LOG = web.RequestKey("request_log", RequestLog)
