"""The supervisor of `serve --workers N`: N worker processes on one port.

Workers share the port with `SO_REUSEPORT`: the kernel spreads connections among them; the
supervisor claims the port first, so a port anything else has is refused (`sockets.claim`). Each
has its own state cache; a conversation whose requests land on several workers gets the same
instructions on each, since its state is folded from the transcript. The supervisor forwards
SIGTERM and SIGHUP to every worker, starts a worker again when one dies (a worker that keeps
dying as it starts is given up on: the supervisor exits saying so), and keeps the list
of live workers where `/readyz` reads it. `/metrics` adds up every worker's counters
(prometheus-client's multiprocess mode, in a directory the supervisor owns).

It serves nothing itself, so it imports nothing that serves (aiohttp, the app, metrics): about
40 MB of memory where a worker idles at 56.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import structlog

from proxy.cli.sockets import claim
from proxy.http.runtime.rundir import metrics_dir, write_started
from proxy.settings.config import Settings

__all__ = ["CANNOT_START", "GAVE_UP", "MAX_QUICK_DEATHS", "METRICS_DIR_ENV", "supervise"]

log = structlog.get_logger("repair_proxy")
METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus-client reads it at import: set, every worker writes its counters there."""
CANNOT_START = 2
"""A process's exit code when its settings, its store or its port are wrong (restarting would
not help)."""
GAVE_UP = 1
"""The supervisor's exit code when a worker kept dying as it started."""
QUICK_DEATH_SECONDS = 10.0
"""A worker that dies this soon after it was started died starting (or crashes at once)."""
MAX_QUICK_DEATHS = 4
"""Quick deaths in a row of one worker after which the supervisor stops the set and exits."""
FIRST_PAUSE = 0.5
"""Seconds before a dead worker is started again; doubled with each quick death in a row."""


class _WorkerSet:
    """The supervisor's workers: started, restarted when one dies (with a growing pause when it
    dies starting), signalled, waited for."""

    def __init__(self, worker_argv: Sequence[str], run_dir: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self._command = [sys.executable, "-m", "proxy", "serve", *worker_argv, "--run-dir", str(run_dir)]
        self._command += ["--supervisor", str(os.getpid())]
        self._run_dir = run_dir
        metrics = metrics_dir(run_dir)
        metrics.mkdir()
        self._env = {**os.environ, METRICS_DIR_ENV: str(metrics)}
        self._clock = clock
        self._processes: dict[int, subprocess.Popen[bytes]] = {}
        self._started: dict[int, float] = {}
        self._quick: dict[int, int] = {}
        """Each worker's deaths in a row within `QUICK_DEATH_SECONDS` of its start."""
        self._due: dict[int, float] = {}
        """Dead workers and when each is started again."""
        self.stopping = False
        self.failure: str | None = None
        """Why the set was given up on, when it was."""

    def start(self, index: int) -> None:
        command = [*self._command, "--worker", str(index)]
        # the worker starts with SIGHUP held (the mask passes through fork and exec) until its
        # reload hook is in place: a reload asked meanwhile is one it does, not its death
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})
        try:
            self._processes[index] = subprocess.Popen(command, env=self._env)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        self._started[index] = self._clock()
        self._due.pop(index, None)
        write_started(self._run_dir, {i: p.pid for i, p in self._processes.items()})

    def signal(self, signum: int, _frame: object = None) -> None:
        """SIGTERM and SIGINT stop the set (each worker drains); SIGHUP reloads every worker."""
        if signum in (signal.SIGTERM, signal.SIGINT):
            self.stopping = True
        for process in self._processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM if signum == signal.SIGINT else signum)

    def restart_dead(self) -> int | None:
        """Start again each worker that died, after a pause that doubles with each death in a row
        within `QUICK_DEATH_SECONDS` of its start. A worker that could not start at all (exit 2:
        its settings, its port), or died that quickly `MAX_QUICK_DEATHS` times in a row, stops
        the set: the code to exit with is returned (`failure` says why, in the second case)."""
        for index, process in list(self._processes.items()):
            now = self._clock()
            if self.stopping:
                return None
            if index in self._due:
                if now >= self._due[index]:
                    self.start(index)
                continue
            if process.poll() is None:
                continue
            lived = now - self._started[index]
            log.error("worker_died", worker=index, code=process.returncode, after_seconds=round(lived, 2))
            if process.returncode == CANNOT_START:
                self.signal(signal.SIGTERM)
                return CANNOT_START
            quick = self._quick.get(index, 0) + 1 if lived < QUICK_DEATH_SECONDS else 0
            self._quick[index] = quick
            if quick >= MAX_QUICK_DEATHS:
                self.failure = (
                    f"worker {index} died {quick} times in a row within {QUICK_DEATH_SECONDS:g} s of starting "
                    f"(last: {_how(process.returncode)}); not starting it again: its own lines above say why"
                )
                self.signal(signal.SIGTERM)
                return GAVE_UP
            self._due[index] = now + FIRST_PAUSE * 2 ** max(0, quick - 1)
        return None

    def wait(self, seconds: float) -> None:
        """Wait for every worker to exit (each exit logged); kill the ones still running after
        `seconds`."""
        deadline = time.monotonic() + seconds
        for index, process in self._processes.items():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
                log.info("worker_exited", worker=index, code=process.returncode)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                log.warning("worker_killed", worker=index, after_seconds=seconds)


def supervise(worker_argv: Sequence[str], settings: Settings, count: int) -> int:
    """Run `count` workers (`python -m proxy serve ... --worker N`) until SIGTERM (then 0), until
    one cannot start (then its exit code, `CANNOT_START`), or until one keeps dying as it starts
    (then `GAVE_UP`, and one line on stderr saying which and how)."""
    # Held, never listened on: a clear error before any worker starts when anything else has the
    # port, port 0 made concrete, and the port kept while a worker restarts (see `claim`).
    # Connections go only to listening sockets.
    held = claim(settings.server.host, settings.server.port)
    port = held.getsockname()[1]
    run_dir = Path(tempfile.mkdtemp(prefix="repair-proxy-"))  # 0700: only this user reaches the sockets
    workers = _WorkerSet([*worker_argv, "--port", str(port)], run_dir)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, workers.signal)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGHUP})  # held since `serve` began
    log.info("supervising", workers=count, port=port, run_dir=str(run_dir))
    code = 0
    try:
        for index in range(count):
            workers.start(index)
        while not workers.stopping:
            time.sleep(0.2)
            code = workers.restart_dead() or 0
        workers.wait(settings.server.drain_timeout + 5)
    finally:
        held.close()
        shutil.rmtree(run_dir, ignore_errors=True)
    if workers.failure is not None:
        print(f"error: {workers.failure}", file=sys.stderr)
    return code


def _how(code: int) -> str:
    """How a process ended, from its exit status."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
