"""`serve --workers N`: one port, N processes. A conversation spread over the workers gets what
one worker gives it; /metrics, /readyz and the admin views answer for the whole set."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sqlite3
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson
import pytest
from chat import stuck_requests
from support import Upstream, completion, json_reply, read_json_log, spawn_proxy, speaking_policy, wait_healthy

from proxy.http.runtime.rundir import started
from proxy.http.serving.app import WORKER_HEADER

ACTING = completion(
    "", tool_calls=[{"id": "c", "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}]
)
ADMIN_TOKEN = "workers-admin-token-0123456789"


@dataclass
class Served:
    process: asyncio.subprocess.Process
    port: int
    run_dir: Path | None
    log: list[dict[str, object]]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
async def serve(upstream: Upstream, tmp_path: Path) -> AsyncIterator[object]:
    """Start `serve --workers N` on the scripted upstream, with an admin token; its log is collected."""
    config = tmp_path / "config.toml"
    config.write_text(
        f'[repair]\npolicy = "{speaking_policy()}"\n[store]\nverdicts = ""\n[[admin.tokens]]\ntoken = "{ADMIN_TOKEN}"\n'
    )
    started: list[tuple[Served, asyncio.Task[None]]] = []

    async def start(workers: int) -> Served:
        process, port = await spawn_proxy(
            "--config", str(config), "--upstream", upstream.base_url, stdout=asyncio.subprocess.PIPE, workers=workers
        )
        assert process.stdout is not None
        served = Served(process, port, None, [])
        reader = asyncio.create_task(read_json_log(process.stdout, served.log))
        started.append((served, reader))
        await wait_healthy(port)
        for _ in range(100):
            if sum(e["event"] == "listening" for e in served.log) == workers:
                break
            await asyncio.sleep(0.1)
        supervising = [e for e in served.log if e["event"] == "supervising"]
        served.run_dir = Path(str(supervising[0]["run_dir"])) if supervising else None
        return served

    yield start
    for served, reader in started:
        if served.process.returncode is None:
            served.process.terminate()
            await asyncio.wait_for(served.process.wait(), 30)
        await reader


async def via_socket(path: Path, body: bytes) -> str:
    """POST one request to a single worker, through its own socket; the worker that answered."""
    async with (
        aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(path))) as client,
        client.post("http://worker/v1/chat/completions", data=body) as response,
    ):
        assert response.status == 200
        await response.read()
        return response.headers[WORKER_HEADER]


async def get(url: str, token: str | None = None) -> tuple[int, dict[str, str], object]:
    """GET on a fresh connection (so the kernel may pick any worker)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as client,
        client.get(url, headers=headers) as response,
    ):
        body = await response.read()
        parsed = orjson.loads(body) if response.content_type == "application/json" else body.decode()
        return response.status, dict(response.headers), parsed


def counter(metrics: str, name: str, **labels: str) -> float:
    """The value of one sample in a Prometheus text exposition (0 when absent)."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in metrics.splitlines():
        if line.startswith(f"{name}{{") and line.split("}")[0][len(name) + 1 :] == wanted:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def shared_states(run_dir: Path, turns: int) -> list[tuple[str, int]]:
    """(team, turns) of the states the workers shared, once one has `turns` (or after 5 s)."""
    rows: list[tuple[str, int]] = []
    for _ in range(100):
        with sqlite3.connect(run_dir / "states.sqlite") as db:
            rows = db.execute("SELECT team, turns FROM states").fetchall()
        if any(found == turns for _team, found in rows):
            break
        await asyncio.sleep(0.05)
    return rows


async def test_a_conversation_spread_over_two_workers_gets_what_one_worker_gives(upstream: Upstream, serve) -> None:
    """Requests of one stuck conversation alternate between two workers: the upstream receives
    the same bodies, instructions included, as from a single worker; /metrics adds both up."""
    upstream.reply_with(json_reply(ACTING))
    steps = stuck_requests()
    one = await serve(1)
    async with aiohttp.ClientSession() as client:
        for body in steps:
            async with client.post(f"{one.base}/v1/chat/completions", data=body) as response:
                assert response.status == 200
    alone = [seen.body for seen in upstream.seen]
    upstream.seen.clear()

    two = await serve(2)
    assert two.run_dir is not None
    answered = [await via_socket(two.run_dir / f"worker-{i % 2}.sock", body) for i, body in enumerate(steps)]
    assert answered == [str(i % 2) for i in range(len(steps))]
    spread = [seen.body for seen in upstream.seen]

    assert spread == alone
    assert sum(sent != seen for sent, seen in zip(steps, spread, strict=True)) >= 2  # instructions were added
    # the workers shared the conversation through their file; its writes are best effort (a
    # write that finds the file busy for 20 ms is skipped: a CI run under load once stopped at
    # turn 6 of 9), so the last turn is awaited but not required (tests/unit/test_shared_states.py
    # holds the exact write policy, in one process)
    ((team, turns),) = await shared_states(two.run_dir, len(steps))
    assert team == "default"
    assert 2 <= turns <= len(steps)
    _status, _headers, metrics = await get(f"{two.base}/metrics")
    assert isinstance(metrics, str)
    assert counter(
        metrics, "repair_proxy_requests_total", route="chat", status="200", team="default", model="qwen2.5-coder"
    ) == len(steps)
    for index in ("0", "1"):  # each worker's own process metrics, by whichever worker answered
        assert counter(metrics, "process_resident_memory_bytes", worker=index) > 0
    _status, _headers, single = await get(f"{one.base}/metrics")
    assert isinstance(single, str)
    trips_two = sum(
        float(x.rsplit(" ", 1)[1]) for x in metrics.splitlines() if x.startswith("repair_proxy_trips_total")
    )
    trips_one = sum(float(x.rsplit(" ", 1)[1]) for x in single.splitlines() if x.startswith("repair_proxy_trips_total"))
    assert trips_two == trips_one > 0


async def test_the_port_spreads_connections_and_admin_views_cover_every_worker(upstream: Upstream, serve) -> None:
    """Fresh connections reach both workers; whichever answers, the admin listing shows the
    conversation as folded to its last turn, and a reset reaches the worker that holds it."""
    upstream.reply_with(json_reply(ACTING))
    two = await serve(2)
    assert two.run_dir is not None
    steps = stuck_requests()
    for i, body in enumerate(steps):
        await via_socket(two.run_dir / f"worker-{i % 2}.sock", body)
    workers = set()
    listings = []
    for _ in range(24):
        status, headers, listing = await get(f"{two.base}/admin/teams/default/conversations", ADMIN_TOKEN)
        assert status == 200
        workers.add(headers[WORKER_HEADER])
        listings.append(listing)
    assert workers == {"0", "1"}
    assert all(listing == listings[0] for listing in listings)
    (only,) = listings[0]["conversations"]  # type: ignore[index]
    assert only["turns"] == len(steps)
    conversation = only["conversation"]
    status, _headers, detail = await get(f"{two.base}/admin/teams/default/conversations/{conversation}", ADMIN_TOKEN)
    assert status == 200
    assert len(detail["timeline"]) == len(steps)  # type: ignore[index]
    async with (
        aiohttp.ClientSession() as client,
        client.delete(
            f"{two.base}/admin/teams/default/conversations/{conversation}",
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        ) as response,
    ):
        assert (await response.json()) == {"reset": True}
    for _ in range(6):
        status, _headers, _body = await get(f"{two.base}/admin/teams/default/conversations/{conversation}", ADMIN_TOKEN)
        assert status == 404  # gone from both workers


async def test_readyz_answers_for_the_set_and_a_dead_worker_is_replaced(upstream: Upstream, serve) -> None:
    """kill -9 one worker: /readyz says which is down until the supervisor has started it again."""
    two = await serve(2)
    assert two.run_dir is not None
    assert (await get(f"{two.base}/readyz"))[0] == 200
    index, pid = next(iter(started(two.run_dir).items()))
    os.kill(pid, signal.SIGKILL)
    seen_down = None
    for _ in range(200):
        status, _headers, body = await get(f"{two.base}/readyz")
        if status == 503:
            seen_down = body
            break
        await asyncio.sleep(0.02)
    assert seen_down == {"status": "unready", "workers_down": [index]}
    for _ in range(300):
        if (await get(f"{two.base}/readyz"))[0] == 200:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the set never became ready again")
    assert any(e["event"] == "worker_died" for e in two.log)
    for _ in range(100):  # the log is read as it comes: the new worker's line may trail its ready file
        if sum(e["event"] == "listening" for e in two.log) == 3:
            break
        await asyncio.sleep(0.05)
    assert sum(e["event"] == "listening" for e in two.log) == 3


async def test_workers_whose_supervisor_is_killed_stop_by_themselves(upstream: Upstream, serve) -> None:
    """kill -9 of the supervisor cannot pass SIGTERM on: each worker sees it is gone and stops,
    so no orphan keeps the port."""
    two = await serve(2)
    assert two.run_dir is not None
    pids = list(started(two.run_dir).values())
    two.process.kill()
    await two.process.wait()
    for _ in range(200):
        alive = [pid for pid in pids if _running(pid)]
        if not alive:
            break
        await asyncio.sleep(0.05)
    assert alive == [], "workers outlived their supervisor"
    assert sum(e["event"] == "supervisor_gone" for e in two.log) == 2


async def test_the_supervisor_loads_nothing_that_serves(upstream: Upstream, serve) -> None:
    """The supervisor serves nothing: aiohttp's HTTP parser (a C extension, so in the process's
    memory map) is loaded by each worker, the must-not side showing the check sees it, and never
    by the supervisor (about 40 MB of memory where a worker idles at 56)."""
    two = await serve(2)
    assert two.run_dir is not None
    pids = list(started(two.run_dir).values())
    assert all(_maps(pid, "aiohttp/_http_parser") for pid in pids)
    assert not _maps(two.process.pid, "aiohttp/_http_parser")


def _maps(pid: int, library: str) -> bool:
    """Whether a process has `library` mapped."""
    with open(f"/proc/{pid}/maps") as maps:
        return library in maps.read()


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie (exited, not yet reaped) is not running
        return stat.read().split(")")[-1].split()[0] != "Z"


@pytest.mark.parametrize("workers", [1, 2])
async def test_a_port_in_use_is_refused_with_its_address(workers: int) -> None:
    """Another process holds the port: exit 2 and one line naming the address, no worker started."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "proxy",
            "serve",
            "--port",
            str(port),
            "--workers",
            str(workers),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in err.decode()
    assert b'"listening"' not in out
