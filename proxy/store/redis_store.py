"""Verdicts in Redis, for several replicas sharing the work."""

from __future__ import annotations

import redis.asyncio as aioredis

from proxy.engine.state.verdict import Verdict

__all__ = ["CONNECT_SECONDS", "REPLY_SECONDS", "RedisVerdictStore"]

CONNECT_SECONDS = 1.0
"""How long connecting to Redis may take before the operation fails (the request then goes on
without memory; the client connects again on the next one)."""
REPLY_SECONDS = 2.0
"""How long Redis may take to answer one command."""


class RedisVerdictStore:
    """Verdicts as JSON strings under `repair-proxy:verdict:<team>:<task>`, one set per team."""

    def __init__(self, url: str) -> None:
        self._redis = aioredis.from_url(url, socket_connect_timeout=CONNECT_SECONDS, socket_timeout=REPLY_SECONDS)

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
