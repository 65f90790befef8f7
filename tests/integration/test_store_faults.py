"""One store fault policy at run time, SQLite and Redis alike: a verdict store that fails while
the proxy runs costs requests their cross-run memory, never their answers (fail-open); it is
seen in `/readyz`'s detail, the `repair_proxy_store_up` gauge and the error counter; and it
recovers by itself, with no restart, once the store can be used again."""

from __future__ import annotations

import asyncio
import shutil
import socket
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from chat import Chat, test_run
from support import Upstream, completion, free_port, json_reply, post

ACTING = completion(
    "", tool_calls=[{"id": "c", "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}]
)
NOTE = "A previous attempt at this task stalled"


async def get(proxy: TestServer, path: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as client, client.get(proxy.make_url(path)) as response:
        body = await response.json() if response.content_type == "application/json" else await response.text()
        return response.status, body


def sample(metrics: str, name: str, labels: str = "") -> float:
    """One sample of the exposition (`labels` as written between the braces), 0 when absent."""
    for line in metrics.splitlines():
        if line.startswith(f"{name}{{{labels}}} ") or (not labels and line.startswith(f"{name} ")):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def stuck_run(proxy: TestServer, upstream: Upstream, prefix: str) -> list[str]:
    """One run of the task, stuck on the same failure three times (a verdict is due on its last
    request), every request answered 200 and forwarded; the texts its first request carried
    upstream (a prior run's note among them, when memory works)."""
    run = Chat(id_prefix=prefix)
    seen = len(upstream.seen)
    status, _headers, _body = await post(proxy, run.bytes())
    assert status == 200
    sent = [str(m.get("content")) for m in upstream.seen[seen].json()["messages"]]
    for out in ("@pytest_addition_a", "@pytest_addition_b", "@pytest_addition_a"):
        status, _headers, _body = await post(proxy, run.turn(test_run(out)).bytes())
        assert status == 200
    assert len(upstream.seen) == seen + 4  # every request went upstream
    return sent


async def test_a_sqlite_file_made_unusable_at_run_time_costs_memory_not_answers(
    make_proxy, upstream: Upstream, tmp_path: Path
) -> None:
    """The verdict file and its WAL removed while the proxy runs, a directory put in its place:
    agents' requests all answered 200 and forwarded, `/readyz` still ready but saying the store
    fails and why, the gauge at 0, failures counted. The directory removed: the next request
    opens a new file by itself, and memory works again (a stuck run's verdict reaches the next
    run's first request)."""
    path = tmp_path / "state" / "verdicts.sqlite3"
    proxy = await make_proxy({"store": {"verdicts": str(path)}})
    upstream.reply_with(json_reply(ACTING))
    status, ready = await get(proxy, "/readyz")
    assert (status, ready["verdict_store"]) == (200, {"status": "ok", "backend": "sqlite"})

    for part in path.parent.glob("verdicts.sqlite3*"):
        part.unlink()
    path.mkdir()
    await stuck_run(proxy, upstream, "broken")
    status, ready = await get(proxy, "/readyz")
    assert status == 200 and ready["status"] == "ready"  # fail-open: the proxy serves
    store = ready["verdict_store"]
    assert store["status"] == "failing" and store["backend"] == "sqlite"
    assert "a directory is there" in store["error"] and store["failures"] >= 2
    _status, metrics = await get(proxy, "/metrics")
    assert sample(metrics, "repair_proxy_store_up") == 0
    assert sample(metrics, "repair_proxy_store_errors_total", 'team="default"') >= 2

    path.rmdir()
    await stuck_run(proxy, upstream, "mended")  # its verdict is written to a new file
    status, ready = await get(proxy, "/readyz")
    assert (status, ready["verdict_store"]) == (200, {"status": "ok", "backend": "sqlite"})
    _status, metrics = await get(proxy, "/metrics")
    assert sample(metrics, "repair_proxy_store_up") == 1
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM verdicts").fetchone() == (1,)
    sent = await stuck_run(proxy, upstream, "next")
    assert any(NOTE in text for text in sent)


async def test_a_verdict_file_swapped_for_another_is_followed_not_written_into_the_void(
    make_proxy, upstream: Upstream, tmp_path: Path
) -> None:
    """The file removed (a cleanup job, a volume replaced) while the proxy runs: before, the old
    connection went on writing into the removed file, and every later verdict was lost without
    a word. Now the proxy opens the file now at the path, and the verdict is there."""
    path = tmp_path / "verdicts.sqlite3"
    proxy = await make_proxy({"store": {"verdicts": str(path)}})
    upstream.reply_with(json_reply(ACTING))
    await post(proxy, Chat(id_prefix="before").bytes())  # the store in use
    for part in tmp_path.glob("verdicts.sqlite3*"):
        part.unlink()
    await stuck_run(proxy, upstream, "after")
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM verdicts").fetchone() == (1,)
    status, ready = await get(proxy, "/readyz")
    assert (status, ready["verdict_store"]["status"]) == (200, "ok")


async def test_redis_down_at_run_time_costs_memory_not_answers(make_proxy, upstream: Upstream) -> None:
    """Redis not answering (nothing listens on its port): the same policy as SQLite's."""
    port = free_port()
    proxy = await make_proxy({"store": {"verdicts": f"redis://127.0.0.1:{port}/0"}})
    upstream.reply_with(json_reply(ACTING))
    await stuck_run(proxy, upstream, "no-redis")
    status, ready = await get(proxy, "/readyz")
    assert status == 200 and ready["status"] == "ready"
    store = ready["verdict_store"]
    assert store["status"] == "failing" and store["backend"] == "redis" and str(port) in store["error"]
    _status, metrics = await get(proxy, "/metrics")
    assert sample(metrics, "repair_proxy_store_up") == 0
    assert sample(metrics, "repair_proxy_store_errors_total", 'team="default"') >= 2


@pytest.fixture
def redis_later() -> Iterator[tuple[int, Any]]:
    """A free port, and a function starting a real redis-server on it (skipped without one)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    started: list[subprocess.Popen[bytes]] = []

    async def start() -> None:
        command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        started.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for _ in range(100):  # 10 s at most
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    return
            await asyncio.sleep(0.1)
        raise AssertionError("redis-server did not start")

    yield port, start
    for process in started:
        process.terminate()
        process.wait(timeout=10)


async def test_redis_back_is_used_again_by_itself(make_proxy, upstream: Upstream, redis_later) -> None:
    """Redis down, then up on the same address: the next requests use it, no restart."""
    port, start = redis_later
    proxy = await make_proxy({"store": {"verdicts": f"redis://127.0.0.1:{port}/0"}})
    upstream.reply_with(json_reply(ACTING))
    await stuck_run(proxy, upstream, "before-redis")
    assert (await get(proxy, "/readyz"))[1]["verdict_store"]["status"] == "failing"
    await start()
    await stuck_run(proxy, upstream, "with-redis")
    assert (await get(proxy, "/readyz"))[1]["verdict_store"] == {"status": "ok", "backend": "redis"}
    sent = await stuck_run(proxy, upstream, "after-redis")
    assert any(NOTE in text for text in sent)
