"""The analysis's deadline where the reading can see it, so that a request's analysis stops where
it is once its budget is spent (mid-turn, inside one long output), not only between turns.

The fold puts its budget in force while it reads (`state.fold.fold_messages`); the reading says
what it reads as it goes (`checkpoint(chars)`: before each call's result, every few hundred
lines of an output it normalises, before each failing output it quotes) and the budget's clock
is read once every `READ_STEP` characters read: at most that much reading (a few ms, every
pattern being linear) goes on past the deadline. Past it, the check in force raises (the budget's
`BudgetExceeded`), and the request goes upstream as it came.

Must never: reach past the fold that put it in force (a context variable, reset on the way out:
a request's deadline never reaches another's analysis, on the event loop or in a worker thread);
do anything with none in force (replay, tests, benchmarks: the engine stays a pure function);
read the clock at every line (the clock is a system call).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["READ_STEP", "checkpoint", "in_force"]

READ_STEP = 32 * 1024
"""Characters read between two readings of the clock."""


@dataclass(slots=True)
class _Meter:
    check: Callable[[], None]
    read: int = 0


_IN_FORCE: ContextVar[_Meter | None] = ContextVar("analysis_deadline", default=None)


@contextmanager
def in_force(check: Callable[[], None] | None) -> Iterator[None]:
    """`check` (raising once the deadline has passed) in force for the reading inside the block."""
    token = _IN_FORCE.set(None if check is None else _Meter(check))
    try:
        yield
    finally:
        _IN_FORCE.reset(token)


def checkpoint(chars: int) -> None:
    """`chars` more characters are about to be read: the deadline is checked once `READ_STEP` have
    been since it last was."""
    meter = _IN_FORCE.get()
    if meter is None:
        return
    meter.read += chars
    if meter.read >= READ_STEP:
        meter.read = 0
        meter.check()
