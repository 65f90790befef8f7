"""Verdicts in one SQLite file: WAL, every write committed (synchronous=FULL) before the
request goes on, so a verdict survives `kill -9`. Calls run in a thread, one at a time."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from proxy.engine.state.verdict import Verdict

__all__ = ["SQLiteVerdictStore"]


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
