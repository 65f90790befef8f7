"""Verdicts in one SQLite file: WAL, every write committed (synchronous=FULL) before the
request goes on, so a verdict survives `kill -9`. Calls run in a thread, one at a time.

A file that cannot be opened at start is `StoreUnusable`: the process says so once and exits
(a setting to fix, not a fault to retry). At run time (see `store.health`) an operation that
fails drops the connection, and the next one opens the file again; so does one that finds
another file at the path, or none (removed, replaced: what the old connection wrote would
be lost with the old file). An operation waits at most `BUSY_SECONDS` for another's lock."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from pathlib import Path

from proxy.engine.state.verdict import Verdict
from proxy.store import StoreUnusable

__all__ = ["BUSY_SECONDS", "SQLiteVerdictStore", "connect"]

BUSY_SECONDS = 2.0
"""How long an operation waits for another connection's write lock before it fails (the
request then goes on without memory)."""


def connect(path: Path) -> sqlite3.Connection:
    """The verdict file opened and its table set up; `StoreUnusable` saying why when it cannot be."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=BUSY_SECONDS)
    except (OSError, sqlite3.Error) as exc:
        raise StoreUnusable(_unusable(path, exc)) from None
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute(
            "CREATE TABLE IF NOT EXISTS verdicts (team TEXT NOT NULL, task TEXT NOT NULL, body BLOB NOT NULL, "
            "written_at REAL NOT NULL, PRIMARY KEY (team, task))"
        )
    except sqlite3.Error as exc:
        db.close()
        raise StoreUnusable(_unusable(path, exc)) from None
    return db


def _unusable(path: Path, exc: Exception) -> str:
    """One line: the store, why it cannot be used (the file system's own reason where there is
    one, SQLite's otherwise), and what to do."""
    return (
        f"verdict store {path}: {_reason(path, exc)}; set store.verdicts (or REPAIR_PROXY_VERDICTS) to a file "
        'this user can create and write, or to "" to run without cross-run memory'
    )


def _reason(path: Path, exc: Exception) -> str:
    if path.is_dir():
        return "a directory is there, not a file"
    if not path.exists():
        try:  # the file system's reason (read-only, no permission, a file where a directory should be)
            with open(path, "ab"):
                pass
            path.unlink()
        except OSError as why:
            return f"cannot create it ({why.strerror or why})"
    elif not os.access(path, os.R_OK | os.W_OK):
        return "this user cannot read and write it"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return f"SQLite says: {exc}"


class SQLiteVerdictStore:
    """One SQLite file in WAL mode; every write is committed before the request goes on."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = connect(self.path)
        self._file = _identity(self.path)
        self._lock = asyncio.Lock()

    async def _run(self, sql: str, args: tuple[object, ...]) -> list[tuple[bytes]]:
        async with self._lock:
            return await asyncio.to_thread(self._execute, sql, args)

    def _execute(self, sql: str, args: tuple[object, ...]) -> list[tuple[bytes]]:
        """`sql` on the file now at the path (opened again when it is another file, or after a
        failure); a failure drops the connection and is raised."""
        if self._db is not None and _identity(self.path) != self._file:
            self._drop()
        if self._db is None:
            self._db = connect(self.path)
            self._file = _identity(self.path)
        try:
            rows: list[tuple[bytes]] = self._db.execute(sql, args).fetchall()
        except sqlite3.Error:
            self._drop()
            raise
        return rows

    def _drop(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            with contextlib.suppress(sqlite3.Error):
                db.close()

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
        async with self._lock:
            self._drop()


def _identity(path: Path) -> tuple[int, int] | None:
    """Which file is at `path` (device, inode); None: none."""
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_dev, found.st_ino
