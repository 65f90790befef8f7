"""A task of the worker that runs while the app runs: started on the way in, cancelled and awaited
on the way out (an aiohttp `cleanup_ctx` yields inside it).

    async with running(look(watch, metrics)):
        yield

Must never: leave the task running past the block, or let its cancellation escape the block.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Any

__all__ = ["running"]


@contextlib.asynccontextmanager
async def running(work: Coroutine[Any, Any, None]) -> AsyncIterator[None]:
    task = asyncio.create_task(work)
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
