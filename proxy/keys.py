"""Typed keys for what the application and each request carry."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from proxy.config import Settings
from proxy.engine import Engine

__all__ = ["ENGINE", "REQUEST_LOG", "SESSION", "SETTINGS", "RequestLog"]

SETTINGS = web.AppKey("settings", Settings)
SESSION = web.AppKey("session", aiohttp.ClientSession)
ENGINE = web.AppKey("engine", Engine)


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
