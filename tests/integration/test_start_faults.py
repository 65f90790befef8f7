"""Faults at start are answers, not loops: `repair-proxy serve` (alone or as a set of workers)
with a store, a config or a port it cannot use exits once, non-zero, with one line on stderr
saying what, where and what to do; a worker that keeps dying as it starts is given up on; a
port anything else has is refused, though workers share theirs with SO_REUSEPORT."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from support import free_port, spawn_proxy, wait_healthy

from proxy.cli.sockets import claim
from proxy.cli.supervisor import GAVE_UP, MAX_QUICK_DEATHS
from proxy.http.runtime.rundir import started

FAULTS = ["a-directory", "under-a-file", "read-only-directory", "not-a-database"]


def unusable_store(tmp_path: Path, fault: str) -> Path:
    """A verdict store path this process cannot use, made real on disk."""
    if fault == "a-directory":
        (tmp_path / "verdicts.sqlite3").mkdir()
        return tmp_path / "verdicts.sqlite3"
    if fault == "under-a-file":
        (tmp_path / "state").write_text("a file where a directory should be")
        return tmp_path / "state" / "verdicts.sqlite3"
    if fault == "read-only-directory":
        if os.geteuid() == 0:  # root writes through a 0555 directory: /proc takes no new files, root or not
            return Path("/proc") / "verdicts.sqlite3"
        (tmp_path / "ro").mkdir(mode=0o555)
        return tmp_path / "ro" / "verdicts.sqlite3"
    (tmp_path / "verdicts.sqlite3").write_bytes(b"not SQLite at all\n" * 256)
    return tmp_path / "verdicts.sqlite3"


async def serve(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> tuple[int, str, str]:
    """`python -m proxy serve ...` run to its end: exit code, stdout, stderr."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("REPAIR_PROXY_")}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "proxy",
        "serve",
        *args,
        env={**clean, **(env or {})},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def said(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip()]


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("workers", [1, 2])
async def test_an_unusable_store_is_said_once_and_nothing_listens(tmp_path: Path, workers: int, fault: str) -> None:
    """Before: each worker died with a raw `sqlite3.OperationalError` traceback and the supervisor
    started it again every second, forever. Now: exit 2 once, one line naming the file, the
    reason and the setting to change; no worker started, nothing listening."""
    path = unusable_store(tmp_path, fault)
    code, out, err = await serve(
        "--port", str(free_port()), "--workers", str(workers), env={"REPAIR_PROXY_VERDICTS": str(path)}
    )
    assert code == 2
    (line,) = said(err)
    assert line.startswith(f"error: verdict store {path}: ")
    assert "store.verdicts" in line and "REPAIR_PROXY_VERDICTS" in line
    assert "Traceback" not in err
    assert '"listening"' not in out and '"worker_died"' not in out and '"supervising"' not in out


@pytest.mark.parametrize("workers", [1, 2])
async def test_an_unusable_config_is_said_once(tmp_path: Path, workers: int) -> None:
    """A config that names a file that is not there: exit 2, one line naming it, no worker."""
    code, out, err = await serve("--port", "0", "--workers", str(workers), "--config", str(tmp_path / "none.toml"))
    assert code == 2
    assert said(err) == [f"error: {tmp_path / 'none.toml'}: <file>: no such file"]
    assert '"listening"' not in out and '"supervising"' not in out


async def test_a_worker_that_keeps_dying_as_it_starts_is_given_up_on(tmp_path: Path) -> None:
    """Worker 0 is killed (as an out-of-memory killer would) each time it is started: the
    supervisor starts it again after a growing pause, and at the `MAX_QUICK_DEATHS`-th quick
    death stops the set (the other worker drains and exits 0) and exits `GAVE_UP`, saying
    which worker and how it died. Never a restart loop."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("REPAIR_PROXY_")}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "proxy", "serve", "--port", "0", "--workers", "2"),
        env={**clean, "REPAIR_PROXY_VERDICTS": ""},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    events: list[dict[str, object]] = []
    killed: set[int] = set()
    try:
        while not any(e["event"] == "supervising" for e in events):
            line = await asyncio.wait_for(process.stdout.readline(), 30)
            assert line, "the supervisor ended before it said where it runs"
            events.append(orjson.loads(line))
        run_dir = Path(str(events[-1]["run_dir"]))
        reading = asyncio.create_task(process.stdout.read())
        errors = asyncio.create_task(process.stderr.read())
        for _ in range(1200):  # 60 s at most
            if process.returncode is not None:
                break
            try:
                pid = started(run_dir).get(0)
            except (OSError, ValueError):  # gone with the set, or being rewritten
                pid = None
            if pid is not None and pid not in killed:
                killed.add(pid)
                os.kill(pid, signal.SIGKILL)
            await asyncio.sleep(0.05)
        code = await asyncio.wait_for(process.wait(), 30)
        out, err = await reading, (await errors).decode()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    events += [orjson.loads(line) for line in out.splitlines() if line.startswith(b"{")]
    assert code == GAVE_UP
    assert len(killed) == MAX_QUICK_DEATHS
    deaths = [e for e in events if e["event"] == "worker_died"]
    assert [(e["worker"], e["code"]) for e in deaths] == [(0, -signal.SIGKILL)] * MAX_QUICK_DEATHS
    assert [e["code"] for e in events if e["event"] == "worker_exited" and e["worker"] == 1] == [0]
    assert said(err)[-1] == (
        f"error: worker 0 died {MAX_QUICK_DEATHS} times in a row within 10 s of starting (last: killed by SIGKILL); "
        "not starting it again: its own lines above say why"
    )


@contextlib.asynccontextmanager
async def occupied(by: str) -> AsyncIterator[int]:
    """A loopback port `by` has: a proxy of 1 or 2 workers, or a plain program listening with
    SO_REUSEPORT (which a set of workers, sharing with SO_REUSEPORT, used to join silently)."""
    if by == "reuseport-listener":
        with socket.socket() as listener:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            listener.bind(("127.0.0.1", 0))
            listener.listen()
            yield listener.getsockname()[1]
        return
    process, port = await spawn_proxy(env={"REPAIR_PROXY_VERDICTS": ""}, workers=int(by.removeprefix("workers-")))
    try:
        await wait_healthy(port)
        yield port
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 30)


@pytest.mark.parametrize(
    ("first", "workers"),
    [("workers-2", 2), ("workers-2", 1), ("workers-1", 2), ("reuseport-listener", 2), ("reuseport-listener", 1)],
)
async def test_a_port_anything_else_has_is_refused_workers_or_not(first: str, workers: int) -> None:
    """Before: two `--workers 2` proxies on one port both bound it and split its connections
    without a word. Now the second exits 2 with one line naming the address and what to do,
    and nothing of it listens."""
    async with occupied(first) as port:
        code, out, err = await serve(
            "--port", str(port), "--workers", str(workers), env={"REPAIR_PROXY_VERDICTS": ""}, timeout=30
        )
    assert code == 2
    assert said(err) == [
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use "
        "(another process listens on it or holds it: stop that one, or choose another --port)"
    ]
    assert '"listening"' not in out and '"supervising"' not in out


async def test_a_set_whose_workers_are_all_down_still_holds_its_port() -> None:
    """The supervisor's claim, not only its workers' listening sockets, keeps the port: while
    none of its workers listens (all being started again), another proxy is still refused."""
    with claim("127.0.0.1", 0) as held:  # what a supervisor holds, never listened on
        port = held.getsockname()[1]
        for workers in (1, 2):
            code, _out, err = await serve(
                "--port", str(port), "--workers", str(workers), env={"REPAIR_PROXY_VERDICTS": ""}, timeout=30
            )
            assert code == 2
            assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in err
