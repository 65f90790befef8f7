"""The durable verdict store: what a stalled run leaves for the next run of the same task.

A verdict is the structured reason an attempt stalled (what failed, its signature and
snippet, how many edits did not change it, which patterns tripped), never a diff or file
contents. Keyed by team and task. SQLite by default (one file, WAL, durable across `kill -9`);
Redis when several replicas share the work. Same interface, same tests.
"""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

import orjson
import redis.asyncio as aioredis

__all__ = ["RedisVerdictStore", "SQLiteVerdictStore", "Verdict", "VerdictStore", "open_store"]


@dataclass(frozen=True, slots=True)
class Verdict:
    team: str
    task: str
    conversation: str
    """The run that wrote it (a run never gets its own verdict back as a prior attempt)."""
    failing_class: str
    signature: str
    snippet: str
    streak: int
    edits_unchanged: int
    patterns: tuple[str, ...]
    written_at: float

    def to_json(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def from_json(cls, raw: bytes | str) -> Verdict:
        data = orjson.loads(raw)
        data["patterns"] = tuple(data.get("patterns", ()))
        return cls(**data)


class VerdictStore(Protocol):
    async def get(self, team: str, task: str) -> Verdict | None: ...
    async def put(self, verdict: Verdict) -> None: ...
    async def clear(self, team: str, task: str) -> None: ...
    async def list(self, team: str) -> list[Verdict]: ...
    async def close(self) -> None: ...


class SQLiteVerdictStore:
    """One SQLite file in WAL mode; every write is committed before the request goes on."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS verdicts (team TEXT NOT NULL, task TEXT NOT NULL, body BLOB NOT NULL, "
            "written_at REAL NOT NULL, PRIMARY KEY (team, task))"
        )
        self._lock = asyncio.Lock()

    async def _run(self, sql: str, args: tuple[object, ...]) -> list[tuple[bytes]]:
        async with self._lock:
            return await asyncio.to_thread(lambda: self._db.execute(sql, args).fetchall())

    async def get(self, team: str, task: str) -> Verdict | None:
        rows = await self._run("SELECT body FROM verdicts WHERE team = ? AND task = ?", (team, task))
        return Verdict.from_json(rows[0][0]) if rows else None

    async def put(self, verdict: Verdict) -> None:
        await self._run(
            "INSERT OR REPLACE INTO verdicts (team, task, body, written_at) VALUES (?, ?, ?, ?)",
            (verdict.team, verdict.task, verdict.to_json(), verdict.written_at),
        )

    async def clear(self, team: str, task: str) -> None:
        await self._run("DELETE FROM verdicts WHERE team = ? AND task = ?", (team, task))

    async def list(self, team: str) -> list[Verdict]:
        rows = await self._run("SELECT body FROM verdicts WHERE team = ? ORDER BY written_at DESC", (team,))
        return [Verdict.from_json(row[0]) for row in rows]

    async def close(self) -> None:
        self._db.close()


class RedisVerdictStore:
    """Verdicts as JSON strings under `repair-proxy:verdict:<team>:<task>`, one set per team."""

    def __init__(self, url: str) -> None:
        self._redis = aioredis.from_url(url)

    @staticmethod
    def _key(team: str, task: str) -> str:
        return f"repair-proxy:verdict:{team}:{task}"

    async def get(self, team: str, task: str) -> Verdict | None:
        raw = await self._redis.get(self._key(team, task))
        return Verdict.from_json(raw) if raw else None

    async def put(self, verdict: Verdict) -> None:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.set(self._key(verdict.team, verdict.task), verdict.to_json())
            pipe.sadd(f"repair-proxy:verdicts:{verdict.team}", verdict.task)
            await pipe.execute()

    async def clear(self, team: str, task: str) -> None:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(self._key(team, task))
            pipe.srem(f"repair-proxy:verdicts:{team}", task)
            await pipe.execute()

    async def list(self, team: str) -> list[Verdict]:
        tasks = await self._redis.smembers(f"repair-proxy:verdicts:{team}")
        found = [await self.get(team, t.decode() if isinstance(t, bytes) else t) for t in sorted(tasks)]
        return sorted((v for v in found if v is not None), key=lambda v: -v.written_at)

    async def close(self) -> None:
        await self._redis.aclose()


def open_store(location: str) -> VerdictStore | None:
    """`redis://...` for Redis, a file path for SQLite, empty for no durable memory."""
    if not location:
        return None
    if location.startswith(("redis://", "rediss://", "unix://")):
        return RedisVerdictStore(location)
    return SQLiteVerdictStore(location.removeprefix("sqlite:"))
