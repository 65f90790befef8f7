"""The durable verdict store: what a stalled run leaves for the next run of the same task.

Keyed by team and task (see `proxy.engine.state.verdict`). SQLite by default (one file, WAL,
durable across `kill -9`); Redis when several replicas share the work. Same interface,
same tests; each backend is imported only when it is used.
"""

from __future__ import annotations

from typing import Protocol

from proxy.engine.state.verdict import Verdict

__all__ = ["Verdict", "VerdictStore", "open_store"]


class VerdictStore(Protocol):
    async def get(self, team: str, task: str) -> Verdict | None: ...
    async def put(self, verdict: Verdict) -> None: ...
    async def clear(self, team: str, task: str) -> None: ...
    async def list(self, team: str) -> list[Verdict]: ...
    async def close(self) -> None: ...


def open_store(location: str) -> VerdictStore | None:
    """`redis://...` for Redis, a file path for SQLite, empty for no durable memory."""
    if not location:
        return None
    if location.startswith(("redis://", "rediss://", "unix://")):
        from proxy.store.redis_store import RedisVerdictStore  # noqa: PLC0415 - only when configured

        return RedisVerdictStore(location)
    from proxy.store.sqlite_store import SQLiteVerdictStore  # noqa: PLC0415 - only when configured

    return SQLiteVerdictStore(location.removeprefix("sqlite:"))
