"""The worker set, seen from one worker: who it is, whether its siblings run, and asking them.

`repair-proxy serve --workers N` runs N processes on one port; the supervisor
(`proxy.cli.serving`) gives them one run directory:

    <run_dir>/workers          "<index> <pid>" of each started worker, one per line
    <run_dir>/ready-<i>        the pid of worker i once its port listens (with `workers`: `/readyz`)
    <run_dir>/metrics/         prometheus-client multiprocess files (`/metrics` adds them up)
    <run_dir>/worker-<i>.sock  each worker's own socket, for views that must see every worker
    <run_dir>/states.sqlite    conversation states every worker writes and reads (`store.shared_states`)

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
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import structlog

log = structlog.get_logger("repair_proxy")

__all__ = [
    "SIBLING_HEADER",
    "SIBLING_TIMEOUT",
    "SUPERVISOR_CHECK_SECONDS",
    "Worker",
    "ask_siblings",
    "metrics_dir",
    "watch_supervisor",
]

SIBLING_HEADER = "X-Repair-Sibling"
"""Set on a request from one worker to another: answer from this worker only."""
SIBLING_TIMEOUT = 5.0
"""Seconds a sibling has to answer; one that does not is left out of the view."""
SUPERVISOR_CHECK_SECONDS = 1.0
"""How often a worker checks that the supervisor that started it still runs."""


@dataclass(frozen=True, slots=True)
class Worker:
    """Which of several workers this process is (both None: the only one)."""

    index: int | None = None
    run_dir: Path | None = None

    @property
    def metrics_dir(self) -> Path | None:
        return None if self.run_dir is None else metrics_dir(self.run_dir)

    @property
    def states(self) -> Path | None:
        """The conversation states the set shares."""
        return None if self.run_dir is None else self.run_dir / "states.sqlite"

    @property
    def socket(self) -> Path | None:
        """This worker's own socket."""
        return None if self.run_dir is None else self.run_dir / f"worker-{self.index}.sock"

    def siblings(self) -> list[Path]:
        """The other workers' sockets."""
        if self.run_dir is None:
            return []
        return sorted(p for p in self.run_dir.glob("worker-*.sock") if p != self.socket)

    def listening(self) -> None:
        """Say this worker's port listens (called once bound)."""
        if self.run_dir is not None:
            (self.run_dir / f"ready-{self.index}").write_text(str(os.getpid()))

    def missing(self) -> list[int]:
        """Workers of the set not serving: not running, or started again and not listening yet."""
        if self.run_dir is None:
            return []
        try:
            started = [line.split() for line in (self.run_dir / "workers").read_text().splitlines()]
        except OSError:
            return []
        return [int(index) for index, pid in started if not _serving(self.run_dir / f"ready-{index}", int(pid))]


def _serving(ready: Path, pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return ready.read_text() == str(pid)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False


def metrics_dir(run_dir: Path) -> Path:
    """Where every worker of the set writes its counters."""
    return run_dir / "metrics"


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


async def watch_supervisor(_app: object) -> AsyncIterator[None]:
    """cleanup_ctx of a worker of a set: when its supervisor is gone (killed with SIGKILL, so it
    could not pass SIGTERM on), the worker stops as on SIGTERM (draining) instead of holding
    the port on its own."""
    parent = os.getppid()

    async def watch() -> None:
        while os.getppid() == parent:
            await asyncio.sleep(SUPERVISOR_CHECK_SECONDS)
        log.warning("supervisor_gone", supervisor=parent)
        os.kill(os.getpid(), signal.SIGTERM)

    task = asyncio.create_task(watch())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
