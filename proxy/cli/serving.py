"""Serving: one worker process (bind, log that it listens, serve until SIGTERM), or a
supervisor of several on one port.

Workers share the port with `SO_REUSEPORT`: the kernel spreads connections among them. Each
has its own state cache; a conversation whose requests land on several workers gets the same
instructions on each, since its state is folded from the transcript. The supervisor forwards
SIGTERM and SIGHUP to every worker, starts a worker again when one dies, and keeps the list
of live workers where `/readyz` reads it. `/metrics` adds up every worker's counters
(prometheus-client's multiprocess mode, in a directory the supervisor owns).
"""

from __future__ import annotations

import ctypes
import gc
import os
import platform
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import structlog
from aiohttp import web

from proxy.http.app import server_options
from proxy.http.workers import Worker, metrics_dir
from proxy.settings.config import Settings

__all__ = ["BindError", "bind", "bind_unix", "one_malloc_arena", "run_worker", "supervise"]

log = structlog.get_logger("repair_proxy")
METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus-client reads it at import: set, every worker writes its counters there."""
_RESTART_PAUSE = 1.0
CANNOT_START = 2
"""A process's exit code when its settings or its port are wrong (restarting would not help)."""
_M_ARENA_MAX = -8  # glibc's malloc.h


def one_malloc_arena() -> bool:
    """Every thread of this process allocates from glibc's main arena (False where malloc is
    not glibc's).

    Large bodies are analysed in worker threads, and glibc gives a thread its own arena: the
    memory freed there after a 546 KB body stays in that arena, apart from the main one.
    Measured (`bench/soak.py --part memory`, 10,000 conversations of 1,000 turns, 64 MB bound):
    RSS 165 MB, then jumps to 174-196 MB from the 3,000th conversation on; with one arena it
    stays at 164-165 MB. Threads here take turns on the interpreter anyway, so sharing the
    arena costs no parallelism; requests small enough to be analysed on the event loop never
    leave its thread."""
    if platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_ARENA_MAX, 1))


class BindError(OSError):
    """The listen address cannot be had (in use, not an address of this host, no permission)."""


def bind(host: str, port: int, reuse_port: bool, listen: bool = True) -> socket.socket:
    """A listening socket, bound before anything says it listens (`listen=False`: only held)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    return _bound(sock, (host, port), f"{host}:{port}", listen)


def bind_unix(path: Path) -> socket.socket:
    """A listening Unix socket at `path`, in place of a stale one a dead worker left there."""
    if path.exists() and stat.S_ISSOCK(path.stat().st_mode):
        path.unlink()
    return _bound(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), str(path), str(path), listen=True)


def _bound(sock: socket.socket, address: tuple[str, int] | str, shown: str, listen: bool) -> socket.socket:
    """`sock` bound to `address` (and listening), non-blocking; closed and a `BindError` naming
    `shown` when the address cannot be had."""
    try:
        sock.bind(address)
        if listen:
            sock.listen(1024)
    except OSError as exc:
        sock.close()
        raise BindError(f"cannot listen on {shown}: {exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock


def run_worker(app: web.Application, settings: Settings, worker: Worker) -> None:
    """Bind, log `listening`, serve until SIGTERM or SIGINT (in-flight requests get the drain time).
    One of several workers shares the port and also listens on its own socket (see `proxy.http.workers`)."""
    sock = bind(settings.server.host, settings.server.port, reuse_port=worker.index is not None)
    # its own socket bound too before it says it listens: a sibling may ask it at once
    socks = [sock] if worker.socket is None else [sock, bind_unix(worker.socket)]
    one_malloc_arena()  # before any thread of this process allocates
    # What exists now (modules, classes, functions, the compiled policies: about 35,000 objects)
    # lives as long as the process: out of the collector's full walks, which otherwise pass over
    # it every time (measured: full collections of 18-37 ms over 76,000 tracked objects).
    gc.collect()
    gc.freeze()
    if worker.index is not None:
        structlog.contextvars.bind_contextvars(worker=worker.index)  # on every log line of this process
    worker.listening()
    log.info(
        "listening",
        host=settings.server.host,
        port=sock.getsockname()[1],
        upstream=settings.upstream.base_url,
        repair=settings.repair.enabled,
    )
    web.run_app(
        app,
        sock=socks,
        shutdown_timeout=settings.server.drain_timeout,
        **server_options(settings),
        access_log=None,
        print=None,
    )


class _WorkerSet:
    """The supervisor's workers: started, restarted when one dies, signalled, waited for."""

    def __init__(self, worker_argv: Sequence[str], run_dir: Path) -> None:
        self._argv = [*worker_argv, "--run-dir", str(run_dir)]
        self._list = run_dir / "workers"
        metrics = metrics_dir(run_dir)
        metrics.mkdir()
        self._env = {**os.environ, METRICS_DIR_ENV: str(metrics)}
        self._processes: dict[int, subprocess.Popen[bytes]] = {}
        self.stopping = False

    def start(self, index: int) -> None:
        command = [sys.executable, "-m", "proxy", "serve", *self._argv, "--worker", str(index)]
        self._processes[index] = subprocess.Popen(command, env=self._env)
        self._list.write_text("".join(f"{i} {p.pid}\n" for i, p in self._processes.items()))

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
