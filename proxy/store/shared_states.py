"""Conversation states shared by the workers of one `serve --workers N`: the state cache's
second level (`engine.state.cache.Tier`), in one SQLite file in the worker set's run directory.

Without it, a conversation whose requests land on different workers (the kernel spreads
connections, not conversations) is folded from its whole transcript by every worker it
reaches: about 2.5 ms for a 24-turn, 60 KB transcript, where loading its state from here
takes about 0.05 ms (0.1 ms at 100 turns). The price is the writes (pickled, 6 KB at 24
turns, 16 KB at 100; 0.09 and 0.2 ms with the write): a conversation several workers serve
is written on every turn, one that stays on one worker (an agent keeps its connection) every
`STICKY_EVERY` turns. A worker loads a conversation's state from here when it holds none, or
an older one than the file's.

It is a cache, nothing more: written with `synchronous=OFF` (a crash loses nothing that
cannot be folded again), bounded in bytes (the oldest rows go first), and best effort: a
busy, locked, damaged or unreadable file, or a state pickled by other code, is a miss
(logged once), never an error. The file lives in the run directory the supervisor creates
(mode 0700) and removes: only this user's worker processes write it, which is what makes
unpickling it safe.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import structlog

from proxy.engine.state.codec import pack, unpack
from proxy.engine.state.conversation import ConversationState

__all__ = ["BUSY_TIMEOUT_MS", "PRUNE_EVERY", "SETUP_TIMEOUT", "SHARED_STATES_SHARE", "STICKY_EVERY", "SharedStates"]

log = structlog.get_logger("repair_proxy")

BUSY_TIMEOUT_MS = 20
"""How long a write waits for another worker's to finish before it is skipped (a miss later)."""
SETUP_TIMEOUT = 10.0
"""How long a worker starting waits for a sibling setting up the same file; past it (or on any
error opening it) the worker keeps its states in a private table and shares none, with a warning."""
PRUNE_EVERY = 256
"""Every this many writes, a worker checks the file's byte bound and prunes the oldest rows."""
STICKY_EVERY = 4
"""A conversation no other worker has been seen serving is written every this many turns (a
worker that takes it over then folds at most this many turns on from the file's state); one
that several workers serve is written on every turn."""
TRACKED = 100_000
"""Conversations whose writes a worker keeps track of (past it, it starts again: writes on
the next turn of each)."""
SHARED_STATES_SHARE = 4
"""The file is bounded to `store.state_cache_bytes` divided by this (64 MiB by default): a
pickled state is several times smaller than the same state in memory (6 KB at 24 turns,
36 KB at 300), so the file holds at least the conversations one worker's cache holds. It
lives in the run directory, which on Kubernetes is a memory-backed volume (128 MiB there)."""


class SharedStates:
    """The `Tier` of a worker set's state caches: one SQLite file, one connection per worker."""

    def __init__(self, path: str | Path, max_bytes: int, ttl_seconds: float) -> None:
        self.path = Path(path)
        self._max_bytes = max_bytes
        self._ttl = ttl_seconds
        self._lock = threading.Lock()  # one connection, used from the event loop and analysis threads
        self._writes = 0
        self._warned = False
        try:
            self._db = self._open(self.path)
        except sqlite3.Error as exc:  # never a worker that does not start: a private table instead
            log.warning("shared_states_unavailable", doing="open", error=str(exc), path=str(self.path))
            self._warned = True
            self._db = self._open(":memory:")
        self._written: dict[tuple[str, str], int] = {}
        """The turns of the state this worker last wrote, per conversation."""
        self._shared: dict[tuple[str, str], int] = {}
        """Conversations another worker has served: the turns of the state of theirs found further
        on than ours."""

    @staticmethod
    def _open(path: Path | str) -> sqlite3.Connection:
        """The file set up (the workers of a set start at once: setting it up waits for a
        sibling doing the same, up to `SETUP_TIMEOUT` seconds; later calls `BUSY_TIMEOUT_MS`)."""
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=SETUP_TIMEOUT)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=OFF")
        db.execute(
            "CREATE TABLE IF NOT EXISTS states (team TEXT NOT NULL, conversation TEXT NOT NULL, "
            "turns INTEGER NOT NULL, body BLOB NOT NULL, stored REAL NOT NULL, PRIMARY KEY (team, conversation))"
        )
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return db

    def load(self, key: tuple[str, str], held: ConversationState | None = None) -> ConversationState | None:
        """The shared state, when it has folded more turns than `held` (a worker that served
        this conversation before holds its own copy, which another may have moved past)."""
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT body, stored, turns FROM states WHERE team = ? AND conversation = ? AND turns > ?",
                    (*key, -1 if held is None else held.turns),
                ).fetchone()
            if row is None or time.time() - row[1] > self._ttl:
                return None
            self._track(self._shared, key, row[2])
            return unpack(row[0])
        except Exception as exc:  # a damaged row, a state of other code: fold again
            self._trouble("load", exc)
            return None

    def store(self, key: tuple[str, str], value: ConversationState) -> None:
        """Written, unless only this worker has served the conversation and it wrote it fewer
        than `STICKY_EVERY` turns ago."""
        last = self._written.get(key)
        if key not in self._shared and last is not None and 0 <= value.turns - last < STICKY_EVERY:
            return
        self._track(self._written, key, value.turns)
        try:
            body = pack(value)
            with self._lock:
                self._db.execute(
                    "INSERT OR REPLACE INTO states (team, conversation, turns, body, stored) VALUES (?, ?, ?, ?, ?)",
                    (*key, value.turns, body, time.time()),
                )
                self._writes += 1
                if self._writes % PRUNE_EVERY == 0:
                    self._prune()
        except Exception as exc:
            self._trouble("store", exc)

    @staticmethod
    def _track(into: dict[tuple[str, str], int], key: tuple[str, str], turns: int) -> None:
        if len(into) >= TRACKED and key not in into:
            into.clear()
        into[key] = turns

    def drop(self, key: tuple[str, str]) -> None:
        self._written.pop(key, None)
        try:
            with self._lock:
                self._db.execute("DELETE FROM states WHERE team = ? AND conversation = ?", key)
        except Exception as exc:
            self._trouble("drop", exc)

    def bytes(self) -> int:
        """What the stored states take (their pickles)."""
        with self._lock:
            return self._total()

    def _total(self) -> int:
        return int(self._db.execute("SELECT COALESCE(SUM(length(body)), 0) FROM states").fetchone()[0])

    def _prune(self) -> None:
        """Down to three quarters of the bound, oldest first, when over it (called under the lock)."""
        total = self._total()
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
        with self._lock:
            self._db.close()
