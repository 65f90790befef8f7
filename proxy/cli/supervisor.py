"""The supervisor of `serve --workers N`: N worker processes on one port.

Workers share the port with `SO_REUSEPORT`: the kernel spreads connections among them. Each
has its own state cache; a conversation whose requests land on several workers gets the same
instructions on each, since its state is folded from the transcript. The supervisor forwards
SIGTERM and SIGHUP to every worker, starts a worker again when one dies, and keeps the list
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
from collections.abc import Sequence
from pathlib import Path

import structlog

from proxy.cli.sockets import bind
from proxy.http.rundir import metrics_dir, write_started
from proxy.settings.config import Settings

__all__ = ["CANNOT_START", "METRICS_DIR_ENV", "supervise"]

log = structlog.get_logger("repair_proxy")
METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus-client reads it at import: set, every worker writes its counters there."""
_RESTART_PAUSE = 1.0
CANNOT_START = 2
"""A process's exit code when its settings or its port are wrong (restarting would not help)."""


class _WorkerSet:
    """The supervisor's workers: started, restarted when one dies, signalled, waited for."""

    def __init__(self, worker_argv: Sequence[str], run_dir: Path) -> None:
        self._argv = [*worker_argv, "--run-dir", str(run_dir)]
        self._run_dir = run_dir
        metrics = metrics_dir(run_dir)
        metrics.mkdir()
        self._env = {**os.environ, METRICS_DIR_ENV: str(metrics)}
        self._processes: dict[int, subprocess.Popen[bytes]] = {}
        self.stopping = False

    def start(self, index: int) -> None:
        command = [sys.executable, "-m", "proxy", "serve", *self._argv, "--worker", str(index)]
        self._processes[index] = subprocess.Popen(command, env=self._env)
        write_started(self._run_dir, {i: p.pid for i, p in self._processes.items()})

    def signal(self, signum: int, _frame: object = None) -> None:
        """SIGTERM and SIGINT stop the set (each worker drains); SIGHUP reloads every worker."""
        if signum in (signal.SIGTERM, signal.SIGINT):
            self.stopping = True
        for process in self._processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM if signum == signal.SIGINT else signum)

    def restart_dead(self) -> int | None:
        """Start again each worker that died; a worker that could not start at all (exit 2: its
        settings, its port) stops the set, and its code is returned."""
        for index, process in list(self._processes.items()):
            if process.poll() is None or self.stopping:
                continue
            log.error("worker_died", worker=index, code=process.returncode)
            if process.returncode == CANNOT_START:
                self.signal(signal.SIGTERM)
                return CANNOT_START
            time.sleep(_RESTART_PAUSE)
            self.start(index)
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
    """Run `count` workers (`python -m proxy serve ... --worker N`) until SIGTERM (then 0), or
    until one cannot start (then its exit code, `CANNOT_START`)."""
    # Held, never listened on: a clear error before any worker starts, port 0 made concrete,
    # and the port kept while a worker restarts. Connections go only to listening sockets.
    held = bind(settings.server.host, settings.server.port, reuse_port=True, listen=False)
    port = held.getsockname()[1]
    run_dir = Path(tempfile.mkdtemp(prefix="repair-proxy-"))  # 0700: only this user reaches the sockets
    workers = _WorkerSet([*worker_argv, "--port", str(port)], run_dir)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, workers.signal)
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
    return code
