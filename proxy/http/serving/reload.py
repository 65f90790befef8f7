"""Reload on SIGHUP: config and policies read again, swapped in only when valid.

Requests in flight keep the runtime they began with; new requests get the new one. An invalid
file is rejected with a log line naming file and key, and the old runtime stays in force.
Conversation state (the cache) carries over. The listen address, stores and connection pool
are fixed at start: changing them needs a restart, and the log says so.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp import web

from proxy.http.runtime.appkeys import RUNTIME
from proxy.settings.config import load_settings
from proxy.settings.problems import ConfigError

__all__ = ["Reloader"]

log = structlog.get_logger("repair_proxy")


@dataclass(frozen=True, slots=True)
class Reloader:
    config_path: str | None
    environ: Mapping[str, str]
    overrides: Mapping[str, Any]

    def reload(self, app: web.Application) -> bool:
        """Read everything again; swap it in when valid. True when swapped."""
        old = app[RUNTIME].current
        try:
            runtime = old.rebuild(load_settings(self.config_path, environ=self.environ, overrides=self.overrides))
        except ConfigError as exc:
            log.error("reload_rejected", problems=[str(p) for p in exc.problems], kept=old.settings.source)
            return False
        fixed = ("server", "store", "limits")
        changed = [name for name in fixed if getattr(old.settings, name) != getattr(runtime.settings, name)]
        if changed:
            log.warning("reload_needs_restart", sections=changed)
        app[RUNTIME].current = runtime
        log.info("reloaded", teams=sorted(runtime.teams))
        return True

    async def install(self, app: web.Application) -> None:
        """on_startup hook: reload on SIGHUP; one asked while the process started (held since
        then, `proxy.cli.main`) is done now."""
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.reload, app)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGHUP})
