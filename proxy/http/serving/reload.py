"""Reload on SIGHUP: config and policies read again, swapped in only when valid.

Requests in flight keep the runtime they began with; new requests get the new one. An invalid
file is rejected with a log line naming file and key, and the old runtime stays in force.
Conversation state (the cache) carries over. The listen address, stores and connection pool
are fixed at start: changing them needs a restart, and the log says so.

The files are read and the policies compiled in a thread (tens of ms, more with many teams,
measured 107-118 ms on a busy machine: on the event loop every request of the worker waited as
long); only the swap is on the loop. (The tokenizer, shared by every runtime, was built at start.)
Reloads asked while one runs are done one after the other, in the order asked.

A pattern a reload puts in shadow stops speaking from then on, but what it already placed stays
where it was placed: an instruction made at a turn is re-inserted at that turn in every later
request of its conversation (so each prompt stays a prefix of the next). The `reloaded` line
says so (`now_shadow`), so nobody takes those lines for the pattern still acting.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Mapping
from typing import Any

import structlog
from aiohttp import web

from proxy.http.runtime.appkeys import RUNTIME
from proxy.http.runtime.tenancy import Runtime
from proxy.settings.config import load_settings
from proxy.settings.kinds import Mode
from proxy.settings.problems import ConfigError

__all__ = ["KEPT_IN_PLACE", "Reloader", "now_shadow"]

log = structlog.get_logger("repair_proxy")

KEPT_IN_PLACE = (
    "instructions these patterns already placed stay at their turns in the conversations that have them "
    "(re-inserted so each prompt stays a prefix of the next); new trips only count"
)


def now_shadow(old: Runtime, new: Runtime) -> dict[str, list[str]]:
    """Per team of `new`, the patterns that acted under `old` and are in shadow now."""
    found: dict[str, list[str]] = {}
    for name, team in new.teams.items():
        before = old.teams.get(name)
        if before is None:
            continue
        was, now = before.engine.rules.options, team.engine.rules.options
        moved = [p for p, o in now.items() if o.mode is Mode.SHADOW and p in was and was[p].mode is Mode.ACT]
        if moved:
            found[name] = sorted(moved)
    return found


class Reloader:
    """Reads the config (`config_path`, `environ`, `overrides`: as the server started) again on
    SIGHUP."""

    def __init__(self, config_path: str | None, environ: Mapping[str, str], overrides: Mapping[str, Any]) -> None:
        self.config_path = config_path
        self.environ = environ
        self.overrides = overrides
        self._one_at_a_time = asyncio.Lock()
        self._running: set[asyncio.Task[bool]] = set()

    def _build(self, old: Runtime) -> Runtime:
        """The next runtime (blocking: run in a thread); `ConfigError` when a file is invalid."""
        return old.rebuild(load_settings(self.config_path, environ=self.environ, overrides=self.overrides))

    async def reload(self, app: web.Application) -> bool:
        """Read everything again; swap it in when valid. True when swapped."""
        async with self._one_at_a_time:
            old = app[RUNTIME].current
            try:
                runtime = await asyncio.to_thread(self._build, old)
            except ConfigError as exc:
                log.error("reload_rejected", problems=[str(p) for p in exc.problems], kept=old.settings.source)
                return False
            fixed = ("server", "store", "limits")
            changed = [name for name in fixed if getattr(old.settings, name) != getattr(runtime.settings, name)]
            if changed:
                log.warning("reload_needs_restart", sections=changed)
            app[RUNTIME].current = runtime
            shadowed = now_shadow(old, runtime)
            said = {"now_shadow": shadowed, "placed_instructions": KEPT_IN_PLACE} if shadowed else {}
            log.info("reloaded", teams=sorted(runtime.teams), **said)
            return True

    def asked(self, app: web.Application) -> None:
        """SIGHUP's handler: the reload runs as a task of the loop (kept until it is done)."""
        task = asyncio.get_running_loop().create_task(self.reload(app))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def install(self, app: web.Application) -> None:
        """on_startup hook: reload on SIGHUP; one asked while the process started (held since
        then, `proxy.cli.main`) is done now."""
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.asked, app)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGHUP})
