"""A worker set's run directory, and one worker's view of it: who it is, whether its siblings run.

`repair-proxy serve --workers N` runs N processes on one port; the supervisor
(`proxy.cli.supervisor`) gives them one run directory:

    <run_dir>/workers          "<index> <pid>" of each started worker, one per line
    <run_dir>/ready-<i>        the pid of worker i once its port listens (with `workers`: `/readyz`)
    <run_dir>/metrics/         prometheus-client multiprocess files (`/metrics` adds them up)
    <run_dir>/worker-<i>.sock  each worker's own socket, for views that must see every worker
    <run_dir>/states.sqlite    conversation states every worker writes and reads (`store.shared_states`)

Nothing here serves (the supervisor imports it, and nothing that serves); asking siblings over
their sockets is `proxy.http.serving.workers`.

A worker of a set is told its supervisor's pid (`--supervisor`), never reads it as its parent:
a supervisor killed while the worker was still starting has already left it to another parent.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Worker", "metrics_dir", "started", "write_started"]

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


@dataclass(frozen=True, slots=True)
class Worker:
    """Which of several workers this process is (all None: the only one)."""

    index: int | None = None
    run_dir: Path | None = None
    supervisor: int | None = None
    """The pid of the supervisor that started this worker."""

    def orphaned(self) -> bool:
        """The supervisor that started this worker is gone (never, for a worker on its own)."""
        return self.supervisor is not None and os.getppid() != self.supervisor

    def stop_with_supervisor(self, on: bool = True) -> bool:
        """On Linux, have the kernel send this process SIGTERM the moment its supervisor dies
        (`on=False`: no longer; False where it cannot). Set first thing in a worker, so one
        that is still starting when its supervisor is killed stops too; `orphaned` then tells
        whether it died before this was set."""
        if self.supervisor is None or not sys.platform.startswith("linux"):
            return False
        try:
            prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            return False
        return bool(prctl(_PR_SET_PDEATHSIG, signal.SIGTERM if on else 0) == 0)

    @property
    def metrics_dir(self) -> Path | None:
        return None if self.run_dir is None else metrics_dir(self.run_dir)

    @property
    def states(self) -> Path | None:
        """The conversation states the set shares."""
        return None if self.run_dir is None else self.run_dir / "states.sqlite"

    @property
    def socket(self) -> Path | None:
        """This worker's own socket."""
        return None if self.run_dir is None else self.run_dir / f"worker-{self.index}.sock"

    def siblings(self) -> list[Path]:
        """The other workers' sockets."""
        if self.run_dir is None:
            return []
        return sorted(p for p in self.run_dir.glob("worker-*.sock") if p != self.socket)

    def listening(self) -> None:
        """Say this worker's port listens (called once bound)."""
        if self.run_dir is not None:
            (self.run_dir / f"ready-{self.index}").write_text(str(os.getpid()))

    def missing(self) -> list[int]:
        """Workers of the set not serving: not running, or started again and not listening yet."""
        if self.run_dir is None:
            return []
        try:
            pids = started(self.run_dir)
        except OSError:
            return []
        return [index for index, pid in pids.items() if not _serving(self.run_dir / f"ready-{index}", pid)]


def _serving(ready: Path, pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return ready.read_text() == str(pid)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False


def metrics_dir(run_dir: Path) -> Path:
    """Where every worker of the set writes its counters."""
    return run_dir / "metrics"


_STARTED = "workers"
"""The list of started workers, in the run directory."""


def write_started(run_dir: Path, pids: dict[int, int]) -> None:
    """List the workers the supervisor started (index -> pid) where `started` reads them."""
    (run_dir / _STARTED).write_text("".join(f"{index} {pid}\n" for index, pid in pids.items()))


def started(run_dir: Path) -> dict[int, int]:
    """The workers the supervisor started: index -> pid (`OSError` when there is no list)."""
    rows = (line.split() for line in (run_dir / _STARTED).read_text().splitlines())
    return {int(index): int(pid) for index, pid in rows}
