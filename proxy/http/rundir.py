"""A worker set's run directory, and one worker's view of it: who it is, whether its siblings run.

`repair-proxy serve --workers N` runs N processes on one port; the supervisor
(`proxy.cli.supervisor`) gives them one run directory:

    <run_dir>/workers          "<index> <pid>" of each started worker, one per line
    <run_dir>/ready-<i>        the pid of worker i once its port listens (with `workers`: `/readyz`)
    <run_dir>/metrics/         prometheus-client multiprocess files (`/metrics` adds them up)
    <run_dir>/worker-<i>.sock  each worker's own socket, for views that must see every worker
    <run_dir>/states.sqlite    conversation states every worker writes and reads (`store.shared_states`)

Nothing here serves (the supervisor imports it, and nothing that serves); asking siblings over
their sockets is `proxy.http.workers`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Worker", "metrics_dir", "started", "write_started"]


@dataclass(frozen=True, slots=True)
class Worker:
    """Which of several workers this process is (both None: the only one)."""

    index: int | None = None
    run_dir: Path | None = None

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
