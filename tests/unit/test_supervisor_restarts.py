"""When the supervisor starts a dead worker again: after a pause that doubles with each death in
a row soon after its start, never in a blind loop (the processes are stand-ins, the clock is
ours: `tests/integration/test_start_faults.py` kills real workers)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import ClassVar

import pytest

from proxy.cli import supervisor
from proxy.cli.supervisor import CANNOT_START, GAVE_UP, MAX_QUICK_DEATHS, QUICK_DEATH_SECONDS, _WorkerSet


class FakeProcess:
    """A worker process as the supervisor sees one: it runs until the test says how it ended."""

    made: ClassVar[list[FakeProcess]] = []

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.command = command
        self.pid = 1000 + len(self.made)
        self.returncode: int | None = None
        FakeProcess.made.append(self)

    def poll(self) -> int | None:
        return self.returncode

    def send_signal(self, signum: int) -> None:
        self.returncode = -signum


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[_WorkerSet, Clock]:
    FakeProcess.made = []
    monkeypatch.setattr(supervisor.subprocess, "Popen", FakeProcess)
    clock = Clock()
    return _WorkerSet(["--port", "1"], tmp_path, clock), clock


def starts(index: int) -> int:
    return sum(p.command[-1] == str(index) for p in FakeProcess.made)


def current(index: int) -> FakeProcess:
    """Worker `index`'s latest process."""
    return [p for p in FakeProcess.made if p.command[-1] == str(index)][-1]


def test_a_worker_dying_as_it_starts_waits_longer_each_time_then_is_given_up(
    workers: tuple[_WorkerSet, Clock],
) -> None:
    """Deaths 1 s after each start: started again after 0.5, 1, 2 s; the 4th ends the set."""
    group, clock = workers
    group.start(0)
    group.start(1)
    for pause in (0.5, 1.0, 2.0):
        clock.now += 1
        current(0).returncode = 1
        assert group.restart_dead() is None
        before = starts(0)
        clock.now += pause - 0.01
        assert group.restart_dead() is None and starts(0) == before  # not yet
        clock.now += 0.01
        assert group.restart_dead() is None and starts(0) == before + 1
    clock.now += 1
    current(0).returncode = 1
    assert group.restart_dead() == GAVE_UP
    assert starts(0) == MAX_QUICK_DEATHS
    assert group.stopping
    assert current(1).returncode == -signal.SIGTERM  # worker 1 asked to stop
    assert group.failure is not None
    assert group.failure.startswith(f"worker 0 died {MAX_QUICK_DEATHS} times in a row within 10 s of starting")
    assert "(last: exit code 1)" in group.failure


def test_a_worker_that_ran_a_while_starts_again_soon_and_its_count_starts_over(
    workers: tuple[_WorkerSet, Clock],
) -> None:
    group, clock = workers
    group.start(0)
    for _ in range(MAX_QUICK_DEATHS - 1):  # three quick deaths...
        clock.now += 1
        current(0).returncode = -signal.SIGKILL
        group.restart_dead()
        clock.now += 10
        group.restart_dead()
    clock.now += QUICK_DEATH_SECONDS  # ...then one after a long run: not quick, so no giving up
    current(0).returncode = -signal.SIGKILL
    assert group.restart_dead() is None
    clock.now += 0.5
    assert group.restart_dead() is None
    assert starts(0) == MAX_QUICK_DEATHS + 1
    assert group.failure is None


def test_a_worker_that_cannot_start_stops_the_set_at_once(workers: tuple[_WorkerSet, Clock]) -> None:
    """Exit 2 is its settings, store or port: no restart, its code is the supervisor's."""
    group, _clock = workers
    group.start(0)
    current(0).returncode = CANNOT_START
    assert group.restart_dead() == CANNOT_START
    assert starts(0) == 1 and group.stopping and group.failure is None


def test_no_restart_while_the_set_stops(workers: tuple[_WorkerSet, Clock]) -> None:
    group, clock = workers
    group.start(0)
    clock.now += 1
    current(0).returncode = 1
    group.restart_dead()
    group.signal(signal.SIGTERM)
    clock.now += 60
    assert group.restart_dead() is None
    assert starts(0) == 1
