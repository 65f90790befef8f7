"""The verdict store's health at run time, one policy for SQLite and Redis.

A store that fails while the proxy runs (the file removed, replaced or locked, a disk full,
Redis down) never fails a request: the request goes on without cross-run memory (fail-open),
each failure is counted, and the store's state is in `/readyz`'s detail and the
`repair_proxy_store_up` gauge. Nothing needs restarting: every operation tries the store
again (SQLite opens its file afresh after a failure, Redis's client reconnects), and the
first one that works marks it recovered. (A store that cannot be used at start is another
matter: the process says so and exits, see `StoreUnusable`.)
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from proxy.engine.state.verdict import Verdict
from proxy.store import VerdictStore

__all__ = ["StoreHealth", "WatchedStore"]

T = TypeVar("T")


class StoreHealth:
    """Whether the verdict store's last operation worked; when it does not, since when and why."""

    def __init__(self, backend: str = "", clock: Callable[[], float] = time.time) -> None:
        self.backend = backend
        """`sqlite`, `redis`, or empty: no store."""
        self._clock = clock
        self.error: str | None = None
        self.since: float | None = None
        """When the store began failing (it fails still)."""
        self.failures = 0
        """Failed operations since it began failing."""

    @property
    def status(self) -> str:
        if not self.backend:
            return "off"
        return "ok" if self.error is None else "failing"

    def failed(self, exc: BaseException) -> bool:
        """Record a failed operation; True when the store was working until now."""
        began = self.error is None
        self.error = str(exc) or type(exc).__name__
        self.failures += 1
        if began:
            self.since = self._clock()
        return began

    def worked(self) -> bool:
        """Record an operation that worked; True when the store was failing until now."""
        recovered = self.error is not None
        self.error, self.since, self.failures = None, None, 0
        return recovered

    def detail(self) -> dict[str, object]:
        """What `/readyz` says of the store."""
        answer: dict[str, object] = {"status": self.status}
        if self.backend:
            answer["backend"] = self.backend
        if self.error is not None and self.since is not None:
            answer |= {"error": self.error, "failing_seconds": round(self._clock() - self.since, 1)}
            answer["failures"] = self.failures
        return answer


class WatchedStore:
    """A `VerdictStore` whose every operation is recorded in `health` (`on_change` called when
    the store begins failing or recovers); a failure is still raised, for the caller to go on
    without memory."""

    def __init__(self, inner: VerdictStore, health: StoreHealth, on_change: Callable[[StoreHealth], None]) -> None:
        self._inner = inner
        self.health = health
        self._on_change = on_change

    async def _watched(self, operation: Awaitable[T]) -> T:
        try:
            result = await operation
        except Exception as exc:
            if self.health.failed(exc):
                self._on_change(self.health)
            raise
        if self.health.worked():
            self._on_change(self.health)
        return result

    async def get(self, team: str, task: str) -> Verdict | None:
        return await self._watched(self._inner.get(team, task))

    async def put(self, verdict: Verdict) -> None:
        await self._watched(self._inner.put(verdict))

    async def clear(self, team: str, task: str) -> None:
        await self._watched(self._inner.clear(team, task))

    async def list(self, team: str) -> list[Verdict]:
        return await self._watched(self._inner.list(team))

    async def close(self) -> None:
        await self._inner.close()
