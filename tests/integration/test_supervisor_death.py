"""Workers stop when their supervisor dies, however early: kill -9 of the supervisor while its
workers are still starting left them listening forever, since each read its supervisor's pid
as its parent's when its app started, by when its parent was already another process."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from support import free_port

from proxy.http.runtime.rundir import started


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:  # a zombie (exited, not yet reaped) is not running
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def listens(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def clean_env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("REPAIR_PROXY_")}, "REPAIR_PROXY_VERDICTS": ""}


@pytest.mark.parametrize("after", [0.0, 0.3, 0.6])
async def test_workers_stop_when_their_supervisor_is_killed_as_they_start(after: float) -> None:
    """kill -9 of the supervisor `after` seconds past the moment both workers were spawned (they
    are still importing, or building their app): every worker stops and nothing keeps the port."""
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "proxy", "serve", "--port", str(port), "--workers", "2"),
        env=clean_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdout is not None
    pids: list[int] = []
    try:
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        run_dir = Path(orjson.loads(line)["run_dir"])
        for _ in range(2000):  # both spawned: 10 s at most
            try:
                pids = list(started(run_dir).values())
            except (OSError, ValueError):
                pids = []
            if len(pids) == 2:
                break
            await asyncio.sleep(0.005)
        assert len(pids) == 2
        await asyncio.sleep(after)
    finally:
        process.kill()
        await process.wait()
    for _ in range(400):  # 20 s at most
        alive = [pid for pid in pids if running(pid)]
        if not alive:
            break
        await asyncio.sleep(0.05)
    assert alive == [], "workers outlived their supervisor"
    assert not listens(port)


async def test_a_worker_whose_supervisor_is_gone_before_it_starts_does_not_start(tmp_path: Path) -> None:
    """The check at a worker's start, which holds where the kernel cannot be asked to stop it
    with its supervisor (not Linux): told a supervisor that is not its parent (a process that
    has exited), the worker says so on stderr, exits 1, and never listens."""
    gone = subprocess.Popen(["true"])  # any process that has exited
    gone.wait()
    port = free_port()
    done = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "proxy", "serve", "--port", str(port), "--worker", "0", "--run-dir", str(tmp_path)),
        *("--supervisor", str(gone.pid)),
        env=clean_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(done.communicate(), 30)
    assert done.returncode == 1
    assert err.decode().splitlines() == [f"error: worker 0: its supervisor (pid {gone.pid}) is gone; not starting"]
    assert b'"listening"' not in out
    assert not listens(port)
