"""The durable verdict store: what a stalled run leaves for the next run of the same task.

Keyed by team and task (see `proxy.engine.state.verdict`). SQLite by default (one file, WAL,
durable across `kill -9`); Redis when several replicas share the work. Same interface,
same tests; each backend is imported only when it is used.

Faults, one policy: a store that cannot be used at start (a SQLite path that cannot be
created or written) is `StoreUnusable`, said once and the process exits; at run time a store
that fails (SQLite or Redis) costs the request its memory, never its answer (fail-open), is
seen in `/readyz` and the metrics, and recovers by itself (`proxy.store.health`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from proxy.engine.state.verdict import Verdict

__all__ = ["StoreUnusable", "Verdict", "VerdictStore", "backend_of", "check_store", "open_store"]


class StoreUnusable(Exception):
    """The verdict store cannot be used: what, where and what to do, in one line."""


class VerdictStore(Protocol):
    async def get(self, team: str, task: str) -> Verdict | None: ...
    async def put(self, verdict: Verdict) -> None: ...
    async def clear(self, team: str, task: str) -> None: ...
    async def list(self, team: str) -> list[Verdict]: ...
    async def close(self) -> None: ...


def backend_of(location: str) -> str:
    """`redis`, `sqlite`, or empty (no durable memory), for a `store.verdicts` location."""
    if not location:
        return ""
    return "redis" if location.startswith(("redis://", "rediss://", "unix://")) else "sqlite"


def open_store(location: str) -> VerdictStore | None:
    """`redis://...` for Redis, a file path for SQLite, empty for no durable memory."""
    if not location:
        return None
    if backend_of(location) == "redis":
        from proxy.store.redis_store import RedisVerdictStore  # noqa: PLC0415 - only when configured

        return RedisVerdictStore(location)
    from proxy.store.sqlite_store import SQLiteVerdictStore  # noqa: PLC0415 - only when configured

    return SQLiteVerdictStore(location.removeprefix("sqlite:"))


def check_store(location: str) -> None:
    """`StoreUnusable` when the store at `location` cannot be used, before anything listens: a
    SQLite file is opened and set up (then closed); a Redis URL is not dialled (Redis down is a
    run-time fault, see above)."""
    if backend_of(location) != "sqlite":
        return
    from proxy.store.sqlite_store import connect  # noqa: PLC0415 - only when configured

    connect(Path(os.path.expanduser(location.removeprefix("sqlite:")))).close()
