"""Asking the other workers of a set (`proxy.http.runtime.rundir` says what a set is), and noticing that
the supervisor that started this one is gone.

Each worker folds the conversations it serves into its own state cache, and writes each state
to the shared file too, so a conversation whose next request lands on another worker is not
folded again from its whole transcript. Requests for one conversation may land on any worker
and get the same instructions either way, because state is re-derived from the transcript;
but the admin views of folded state (`/admin/.../conversations`) see one cache.
`ask_siblings` lets the worker that answers ask the others over their sockets, with
`SIBLING_HEADER` set so that they answer from their own cache alone.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import structlog
from aiohttp import web

from proxy.http.runtime.appkeys import WORKER
from proxy.http.runtime.background import running
from proxy.http.runtime.rundir import Worker

log = structlog.get_logger("repair_proxy")

__all__ = [
    "SIBLING_HEADER",
    "SIBLING_TIMEOUT",
    "SUPERVISOR_CHECK_SECONDS",
    "ask_siblings",
    "watch_supervisor",
]

SIBLING_HEADER = "X-Repair-Sibling"
"""Set on a request from one worker to another: answer from this worker only."""
SIBLING_TIMEOUT = 5.0
"""Seconds a sibling has to answer; one that does not is left out of the view."""
SUPERVISOR_CHECK_SECONDS = 1.0
"""How often a worker checks that the supervisor that started it still runs."""


async def ask_siblings(worker: Worker, method: str, path: str, authorization: str) -> list[Any]:
    """Each sibling's JSON answer to `method path` (with the caller's admin token); a sibling
    that is down, slow or answers other than 200 is left out."""
    sockets = worker.siblings()
    if not sockets:
        return []
    return [a for a in await asyncio.gather(*(_ask(s, method, path, authorization) for s in sockets)) if a is not None]


async def _ask(sock: Path, method: str, path: str, authorization: str) -> Any:
    headers = {SIBLING_HEADER: "1", "Authorization": authorization}
    timeout = aiohttp.ClientTimeout(total=SIBLING_TIMEOUT)
    try:
        async with (
            aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(sock)), timeout=timeout) as client,
            client.request(method, f"http://worker{path}", headers=headers) as response,
        ):
            if response.status != 200:
                return None
            return orjson.loads(await response.read())
    except (aiohttp.ClientError, TimeoutError, OSError, orjson.JSONDecodeError):
        return None


async def watch_supervisor(app: web.Application) -> AsyncIterator[None]:
    """cleanup_ctx of a worker of a set: when its supervisor is gone (killed with SIGKILL, so it
    could not pass SIGTERM on), the worker stops as on SIGTERM (draining) instead of holding
    the port on its own. Until now the kernel's SIGTERM on the supervisor's death stopped it
    (`Worker.stop_with_supervisor`); from here this watch does, and logs why: one signal, not
    two (a second one later than `DUPLICATE_SIGNAL_SECONDS` would cut the drain short)."""
    worker = app[WORKER]
    worker.stop_with_supervisor(on=False)
    supervisor = worker.supervisor if worker.supervisor is not None else os.getppid()

    async def watch() -> None:
        while os.getppid() == supervisor:  # checked at once: it may be gone already
            await asyncio.sleep(SUPERVISOR_CHECK_SECONDS)
        log.warning("supervisor_gone", supervisor=supervisor)
        os.kill(os.getpid(), signal.SIGTERM)

    async with running(watch()):
        yield
