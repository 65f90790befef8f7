"""Conversation states shared by the workers of one `serve --workers N`: the state cache's
second level (`engine.statecache.Tier`), in one SQLite file in the worker set's run directory.

Without it, a conversation whose requests land on different workers (the kernel spreads
connections, not conversations) is folded from its whole transcript by every worker it
reaches: about 2.5 ms for a 24-turn, 60 KB transcript, where loading its state from here
takes about 0.05 ms. The price is a write per request: every state a worker stores is written
here too (pickled, about 6 KB at 24 turns; 0.09 ms with the write). A worker loads a
conversation's state from here when it holds none, or an older one than the file's.

Writes go through a thread of their own, so a request does not wait for them (a state another
worker needs before it is written is folded there instead, with the same result).
It is a cache, nothing more: written with `synchronous=OFF` (a crash loses nothing that
cannot be folded again), bounded in bytes (the oldest rows go first), and best effort: a
busy, locked, damaged or unreadable file, or a state pickled by other code, is a miss
(logged once), never an error. The file lives in the run directory the supervisor creates
(mode 0700) and removes: only this user's worker processes write it, which is what makes
unpickling it safe.
"""

from __future__ import annotations

import dataclasses
import io
import pickle
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import structlog

from proxy.engine.state import ConversationState

__all__ = ["BUSY_TIMEOUT_MS", "PRUNE_EVERY", "SHARED_STATES_SHARE", "SharedStates"]

log = structlog.get_logger("repair_proxy")

BUSY_TIMEOUT_MS = 20
"""How long a write waits for another worker's to finish before it is skipped (a miss later)."""
PRUNE_EVERY = 256
"""Every this many writes, a worker checks the file's byte bound and prunes the oldest rows."""
SHARED_STATES_SHARE = 4
"""The file is bounded to `store.state_cache_bytes` divided by this (64 MiB by default): a
pickled state is several times smaller than the same state in memory (6 KB at 24 turns,
36 KB at 300), so the file holds at least the conversations one worker's cache holds. It
lives in the run directory, which on Kubernetes is a memory-backed volume (128 MiB there)."""


_UPSERT = "INSERT OR REPLACE INTO states (team, conversation, turns, body, stored) VALUES (?, ?, ?, ?, ?)"
_INIT_FIELDS: dict[type, tuple[str, ...] | None] = {}


class _Pickler(pickle.Pickler):
    """Dataclasses pickled as their constructor's arguments: a state is mostly small frozen
    dataclasses, and the default (a dict of slots per object) takes about half as long
    again to write and twice as long to read."""

    def reducer_override(self, obj: Any) -> Any:
        kind = type(obj)
        names = _INIT_FIELDS.get(kind, ())
        if names == ():
            names = (
                tuple(f.name for f in dataclasses.fields(obj))
                if dataclasses.is_dataclass(obj)
                and not isinstance(obj, type)
                and all(f.init for f in dataclasses.fields(obj))
                else None
            )
            _INIT_FIELDS[kind] = names
        if names is None:
            return NotImplemented
        return kind, tuple(getattr(obj, name) for name in names)


def _dumps(state: ConversationState) -> bytes:
    out = io.BytesIO()
    _Pickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(state)
    return out.getvalue()


class SharedStates:
    """The `Tier` of a worker set's state caches: one SQLite file, one connection per worker."""

    def __init__(self, path: str | Path, max_bytes: int, ttl_seconds: float) -> None:
        self.path = Path(path)
        self._max_bytes = max_bytes
        self._ttl = ttl_seconds
        self._lock = threading.Lock()  # one connection, used from the event loop and analysis threads
        self._writes = 0
        self._warned = False
        self._db = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS states (team TEXT NOT NULL, conversation TEXT NOT NULL, "
            "turns INTEGER NOT NULL, body BLOB NOT NULL, stored REAL NOT NULL, PRIMARY KEY (team, conversation))"
        )
        # states to write, the latest per conversation; the writer thread takes them
        self._pending: dict[tuple[str, str], ConversationState] = {}
        self._writing = 0
        self._closing = False
        self._wake = threading.Condition()
        self._writer = threading.Thread(target=self._write_loop, name="shared-states", daemon=True)
        self._writer.start()

    def load(self, key: tuple[str, str], held: ConversationState | None = None) -> ConversationState | None:
        """The shared state, when it has folded more turns than `held` (a worker that served
        this conversation before holds its own copy, which another may have moved past)."""
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT body, stored FROM states WHERE team = ? AND conversation = ? AND turns > ?",
                    (*key, -1 if held is None else held.turns),
                ).fetchone()
            if row is None or time.time() - row[1] > self._ttl:
                return None
            state = pickle.loads(row[0])
        except Exception as exc:  # a damaged row, a state of other code: fold again
            self._trouble("load", exc)
            return None
        return state if isinstance(state, ConversationState) else None

    def store(self, key: tuple[str, str], value: ConversationState) -> None:
        """Queued for the writer thread (the request does not wait for the pickle and the
        write); a later state of the same conversation replaces one not yet written."""
        with self._wake:
            if self._closing:
                return
            self._pending[key] = value
            self._wake.notify()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued state is written (False: not within `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        with self._wake:
            while self._pending or self._writing:
                left = deadline - time.monotonic()
                if left <= 0 or not self._writer.is_alive():
                    return False
                self._wake.wait(left)
        return True

    def _write_loop(self) -> None:
        while True:
            with self._wake:
                while not self._pending and not self._closing:
                    self._wake.wait()
                if not self._pending:
                    return
                batch, self._pending = self._pending, {}
                self._writing = len(batch)
            try:
                self._write(batch)
            finally:
                with self._wake:
                    self._writing = 0
                    self._wake.notify_all()

    def _write(self, batch: dict[tuple[str, str], ConversationState]) -> None:
        """One transaction for what was queued."""
        try:
            rows = [(*key, value.turns, _dumps(value), time.time()) for key, value in batch.items()]
            with self._lock:
                self._db.execute("BEGIN")
                try:
                    self._db.executemany(_UPSERT, rows)
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                before, self._writes = self._writes, self._writes + len(rows)
                if before // PRUNE_EVERY != self._writes // PRUNE_EVERY:
                    self._prune()
        except Exception as exc:
            self._trouble("store", exc)

    def drop(self, key: tuple[str, str]) -> None:
        with self._wake:
            self._pending.pop(key, None)
        self.flush()  # a write already under way lands before the delete
        try:
            with self._lock:
                self._db.execute("DELETE FROM states WHERE team = ? AND conversation = ?", key)
        except Exception as exc:
            self._trouble("drop", exc)

    def bytes(self) -> int:
        """What the stored states take (their pickles)."""
        with self._lock:
            return int(self._db.execute("SELECT COALESCE(SUM(length(body)), 0) FROM states").fetchone()[0])

    def _prune(self) -> None:
        """Down to three quarters of the bound, oldest first, when over it (called under the lock)."""
        total = int(self._db.execute("SELECT COALESCE(SUM(length(body)), 0) FROM states").fetchone()[0])
        if total <= self._max_bytes:
            return
        excess, removed = total - self._max_bytes * 3 // 4, 0
        rows = self._db.execute("SELECT team, conversation, length(body) FROM states ORDER BY stored").fetchall()
        doomed = []
        for team, conversation, size in rows:
            if removed >= excess:
                break
            doomed.append((team, conversation))
            removed += size
        self._db.executemany("DELETE FROM states WHERE team = ? AND conversation = ?", doomed)

    def _trouble(self, doing: str, exc: Exception) -> None:
        if not self._warned:
            self._warned = True
            log.warning("shared_states_unavailable", doing=doing, error=str(exc), path=str(self.path))

    def close(self) -> None:
        """Write what is queued, stop the writer, close the file."""
        with self._wake:
            self._closing = True
            self._wake.notify_all()
        self._writer.join(timeout=5.0)
        with self._lock:
            self._db.close()
