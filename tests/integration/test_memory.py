"""Cross-run memory and the verdict store, on a real SQLite file and a real Redis server."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import orjson
import pytest
from chat import Chat, edit, test_run
from support import Upstream, completion, json_reply, post, spawn_proxy, wait_healthy

from proxy.engine.state.verdict import Verdict
from proxy.store import VerdictStore, open_store
from proxy.store.sqlite_store import SQLiteVerdictStore

ACTING = completion(
    "", tool_calls=[{"id": "c", "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}]
)


def verdict(team: str = "t", task: str = "task-1", at: float = 1.0) -> Verdict:
    return Verdict(team, task, "conv-1", "fail", "ab" * 32, "E  assert 4 == 3", 3, 2, ("stuck_same_diagnostic",), at)


@pytest.fixture(params=["sqlite", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[VerdictStore]:
    location = str(tmp_path / "v.sqlite3") if request.param == "sqlite" else request.getfixturevalue("redis_url")
    opened = open_store(location)
    assert opened is not None
    for team in ("t", "u"):
        for v in await opened.list(team):
            await opened.clear(team, v.task)
    yield opened
    await opened.close()


async def test_store_round_trip(store: VerdictStore) -> None:
    """put, get, list and clear behave the same on SQLite and Redis; teams never see each other's."""
    await store.put(verdict())
    await store.put(verdict(task="task-2", at=2.0))
    await store.put(verdict(team="u"))
    assert await store.get("t", "task-1") == verdict()
    assert [v.task for v in await store.list("t")] == ["task-2", "task-1"]
    assert [v.team for v in await store.list("u")] == ["u"]
    await store.clear("t", "task-1")
    assert await store.get("t", "task-1") is None
    assert await store.get("u", "task-1") == verdict(team="u")


async def test_sqlite_store_survives_reopen(tmp_path: Path) -> None:
    """A verdict written and committed is there when the file is opened again."""
    first = SQLiteVerdictStore(tmp_path / "v.sqlite3")
    await first.put(verdict())
    await first.close()
    second = SQLiteVerdictStore(tmp_path / "v.sqlite3")
    assert await second.get("t", "task-1") == verdict()
    await second.close()


def run_chat(prefix: str) -> Chat:
    return Chat(id_prefix=prefix)


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
async def test_verdict_of_run_one_reaches_run_two_and_a_pass_clears_it(
    make_proxy, upstream: Upstream, tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    """Run 1 gets stuck; run 2 of the same task is told why in its first request; run 2 passing clears it for run 3."""
    location = str(tmp_path / "v.sqlite3") if backend == "sqlite" else request.getfixturevalue("redis_url")
    proxy = await make_proxy({"store": {"verdicts": location}})
    upstream.reply_with(json_reply(ACTING))
    if backend == "redis":  # a shared server: start clean
        store = open_store(location)
        assert store is not None
        for v in await store.list("default"):
            await store.clear("default", v.task)
        await store.close()
    one = run_chat("run1")
    for out in ("@pytest_addition_a", "@pytest_addition_b", "@pytest_addition_a"):
        await post(proxy, one.turn(test_run(out)).bytes())
    first = len(upstream.seen)
    two = run_chat("run2")
    await post(proxy, two.bytes())  # run 2's first request: task only
    note = upstream.seen[first].json()["messages"]
    assert "A previous attempt at this task stalled" in note[2]["content"]
    assert "assert 4 == 3" in note[2]["content"]
    await post(proxy, two.turn(test_run()).bytes())  # its second request keeps the note in place
    assert upstream.seen[-1].json()["messages"][: len(note)] == note
    await post(proxy, two.turn(edit(), test_run("@pytest_pass")).bytes())
    three = run_chat("run3")
    await post(proxy, three.bytes())
    assert all("previous attempt" not in str(m.get("content")) for m in upstream.seen[-1].json()["messages"])


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
async def test_memory_survives_kill_9(
    upstream: Upstream, tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    """Run 1 through one proxy process, kill -9, a new process: run 2's first request still gets the note."""
    location = str(tmp_path / "v.sqlite3") if backend == "sqlite" else request.getfixturevalue("redis_url")
    upstream.reply_with(json_reply(ACTING))
    one = run_chat(f"kill9-{backend}-1")
    one.messages[1]["content"] = f"Task for the kill -9 test ({backend}, {time.time()})."
    bodies = [
        one.turn(test_run(out)).bytes() for out in ("@pytest_addition_a", "@pytest_addition_b", "@pytest_addition_a")
    ]
    two = Chat(user=one.messages[1]["content"], id_prefix=f"kill9-{backend}-2")

    async def serve() -> tuple[asyncio.subprocess.Process, str]:
        process, port = await spawn_proxy("--upstream", upstream.base_url, env={"REPAIR_PROXY_VERDICTS": location})
        await wait_healthy(port)
        return process, f"http://127.0.0.1:{port}"

    first, base = await serve()
    try:
        async with aiohttp.ClientSession() as client:
            for body in bodies:
                async with client.post(base + "/v1/chat/completions", data=body) as r:
                    await r.read()
    finally:
        first.send_signal(signal.SIGKILL)
        await first.wait()
    second, base = await serve()
    try:
        async with aiohttp.ClientSession() as client, client.post(base + "/v1/chat/completions", data=two.bytes()) as r:
            await r.read()
    finally:
        second.terminate()
        await second.wait()
    sent = orjson.loads(upstream.seen[-1].body)["messages"]
    assert "A previous attempt at this task stalled" in sent[2]["content"]


async def test_memory_follows_the_persons_request_not_the_agents_environment_block(
    make_proxy, upstream: Upstream, tmp_path: Path
) -> None:
    """Codex sends its `<environment_context>` as the first user message of every run in a
    directory: a stuck run there leaves a verdict for its own request only, so an unrelated
    prompt in the same directory gets no note, and the same prompt again does."""
    environment = "<environment_context>\n  <cwd>/home/me/calc</cwd>\n  <shell>bash</shell>\n</environment_context>"

    def codex(prefix: str, prompt: str) -> Chat:
        return Chat(id_prefix=prefix, system="You are Codex.", user=environment).user(prompt)

    proxy = await make_proxy({"store": {"verdicts": str(tmp_path / "v.sqlite3")}})
    upstream.reply_with(json_reply(ACTING))
    stuck = codex("run1", "Fix the failing test")
    for out in ("@pytest_addition_a", "@pytest_addition_b", "@pytest_addition_a"):
        await post(proxy, stuck.turn(test_run(out)).bytes())

    def noted() -> bool:
        return any(
            "A previous attempt at this task stalled" in str(m.get("content"))
            for m in upstream.seen[-1].json()["messages"]
        )

    await post(proxy, codex("run2", "What is the capital of France?").bytes())
    assert not noted()
    await post(proxy, codex("run3", "Fix the failing test").bytes())
    assert noted()
