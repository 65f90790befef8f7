"""The analysis budget: how long one request may wait for its analysis before it is given up.

The engine checks it between turns and, inside a turn, as it reads (once every
`text.deadline.READ_STEP` characters: each turn's scanning is itself bounded, see
`observe.window`, and every pattern is linear); past the deadline it raises `BudgetExceeded`
where the reading is, and the caller forwards the request as it came (fail-open). The clock is
the caller's, so the engine stays deterministic. The server's clock is wall time from when the
request's analysis begins (`time.perf_counter`): what bounds a request is what it waits, its
reading and whatever else takes the interpreter or the cores meanwhile (another request's step,
a collection, other processes on a busy machine). A budget of CPU time did not: on a machine
whose cores two model servers hold, 100 ms of CPU took 400-600 ms (bench/turn_cost.py). A
conversation first seen long is not folded within a request's budget at all: it is caught up
beside the traffic (`http.runtime.catchup`).
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Budget", "BudgetExceeded", "GcAccounting"]


class BudgetExceeded(Exception):
    """The analysis ran past its budget: the request is forwarded as it came. `progress`: the
    conversation's state folded so far, its cursor at the first turn not folded (None: nothing
    folded), which the engine keeps so that the next request goes on from there instead of
    starting again and running out again."""

    def __init__(self, progress: Any = None) -> None:
        super().__init__()
        self.progress = progress


class GcAccounting:
    """CPU time the garbage collector spends, per thread (a `gc.callbacks` hook while installed:
    the CPU time an analysis reports leaves it out), and pauses of the collector while large bodies
    are analysed.

    Parsing a body of many MB makes hundreds of thousands of objects at once, which sets off
    collections of the whole heap (measured: 150-240 ms each, holding the interpreter, so the
    event loop too). Those objects form no cycles and are freed by reference counting when the
    analysis ends, so while any large analysis runs the collector is paused."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self._pausing = 0
        self._was_enabled = False

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No collection until the last of the analyses inside such a block has ended."""
        with self._lock:
            if self._pausing == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._pausing += 1
        try:
            yield
        finally:
            with self._lock:
                self._pausing -= 1
                if self._pausing == 0 and self._was_enabled:
                    gc.enable()

    def _callback(self, phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            self._local.started = time.thread_time()
        else:
            started = getattr(self._local, "started", None)
            if started is not None:
                self._local.spent = self.spent() + time.thread_time() - started

    def spent(self) -> float:
        """Seconds of this thread's CPU time the collector has taken so far."""
        return float(getattr(self._local, "spent", 0.0))

    def install(self) -> None:
        if self._callback not in gc.callbacks:
            gc.callbacks.append(self._callback)

    def uninstall(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def work_clock(self) -> float:
        """This thread's CPU time, less what the collector took of it (what a request's analysis
        cost, beside the wall time it waited)."""
        return time.thread_time() - self.spent()


@dataclass(frozen=True, slots=True)
class Budget:
    deadline: float
    clock: Callable[[], float] = field(default=time.perf_counter)

    @classmethod
    def of(cls, seconds: float, clock: Callable[[], float] = time.perf_counter) -> Budget:
        """A budget of `seconds` on `clock` (wall time, by default) from now."""
        return cls(clock() + seconds, clock)

    def check(self) -> None:
        if self.clock() > self.deadline:
            raise BudgetExceeded
