"""A task that runs while the app runs (`proxy.http.runtime.background.running`)."""

from __future__ import annotations

import asyncio

from proxy.http.runtime.background import running


async def test_the_task_runs_inside_the_block_and_is_cancelled_and_awaited_on_leaving_it() -> None:
    seen: list[str] = []
    started = asyncio.Event()

    async def work() -> None:
        seen.append("started")
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async with running(work()):
        await asyncio.wait_for(started.wait(), 10)
        assert seen == ["started"]
    assert seen == ["started", "cancelled"]  # awaited: its cleanup ran before the block was left


async def test_a_task_that_already_ended_leaves_the_block_quietly() -> None:
    async def done() -> None:
        return None

    async with running(done()):
        await asyncio.sleep(0)
    assert asyncio.current_task() is not None and not asyncio.current_task().cancelling()  # type: ignore[union-attr]
