"""SIGHUP reloads config and policies without dropping requests; an invalid file keeps the old ones."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path

import aiohttp
import orjson
import pytest
from chat import Chat, test_run
from support import STUCK_ACTS, Upstream, completion, json_reply, policy_toml, spawn_proxy, sse_reply, wait_healthy

from proxy.http.runtime.rundir import started

ACTING = completion(
    "", tool_calls=[{"id": "c", "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}]
)


async def wait_for_lines(stream: asyncio.StreamReader, event: str, count: int) -> list[dict[str, object]]:
    """The next `count` log lines of `event` (one per worker)."""
    found: list[dict[str, object]] = []
    while len(found) < count:
        line = await asyncio.wait_for(stream.readline(), 15)
        assert line, f"the proxy exited before logging {event}"
        if line.startswith(b"{") and orjson.loads(line).get("event") == event:
            found.append(orjson.loads(line))
    return found


@pytest.mark.parametrize("workers", [1, 2])
async def test_sighup_reloads_policy_keeps_old_on_error_and_drops_nothing(
    upstream: Upstream, tmp_path: Path, workers: int
) -> None:
    """placement changes on SIGHUP (in every worker); a broken policy is rejected (logged with file
    and key) and the last good one stays."""
    policy = tmp_path / "team.toml"
    policy.write_text(policy_toml({"repair": {"placement": "system"}, **STUCK_ACTS}))
    config = tmp_path / "config.toml"
    config.write_text(f'[repair]\npolicy = "{policy}"\n[store]\nverdicts = ""\n')
    process, port = await spawn_proxy(
        "--config", str(config), "--upstream", upstream.base_url, stdout=asyncio.subprocess.PIPE, workers=workers
    )
    assert process.stdout is not None
    base = f"http://127.0.0.1:{port}/v1/chat/completions"
    try:
        await wait_healthy(port)

        async def stuck_request(prefix: str) -> str:
            upstream.reply_with(json_reply(ACTING))
            chat = Chat(id_prefix=prefix).turn(test_run()).turn(test_run("@pytest_addition_b")).turn(test_run())
            async with aiohttp.ClientSession() as client, client.post(base, data=chat.bytes()) as r:
                await r.read()
            return str(upstream.seen[-1].json()["messages"][-1]["role"])

        assert await stuck_request("a") == "system"
        # a slow stream in flight across the reload completes
        chunks = [b'data: {"n": %d}\n\n' % i for i in range(6)] + [b"data: [DONE]\n\n"]
        upstream.reply_with(sse_reply(chunks, gap=0.1))
        async with aiohttp.ClientSession() as client, client.post(base, data=b'{"stream": true}') as r:
            first = await r.content.readany()
            policy.write_text(policy_toml({"repair": {"placement": "user"}, **STUCK_ACTS}))
            process.send_signal(signal.SIGHUP)
            rest = await r.read()
        assert first + rest == b"".join(chunks)
        reloaded = await wait_for_lines(process.stdout, "reloaded", workers)
        if workers > 1:
            assert sorted(str(line["worker"]) for line in reloaded) == [str(i) for i in range(workers)]
        assert await stuck_request("b") == "user"
        policy.write_text('[repair]\nplacement = "sideways"\n')
        process.send_signal(signal.SIGHUP)
        for rejected in await wait_for_lines(process.stdout, "reload_rejected", workers):
            problems = rejected["problems"]
            assert isinstance(problems, list)
            assert any(f"{policy}: repair.placement" in p for p in problems)
        for prefix in "cdef":  # whichever worker answers
            assert await stuck_request(prefix) == "user"
    finally:
        process.terminate()
        await process.wait()


async def test_a_reload_asked_while_the_workers_start_is_done_by_each_not_their_death(
    upstream: Upstream, tmp_path: Path
) -> None:
    """SIGHUP as soon as the supervisor has started its two workers (their interpreters still
    loading): each worker reloads once its hook is in place, none dies of the signal."""
    config = tmp_path / "config.toml"
    config.write_text('[store]\nverdicts = ""\n')
    process, port = await spawn_proxy(
        "--config", str(config), "--upstream", upstream.base_url, stdout=asyncio.subprocess.PIPE, workers=2
    )
    assert process.stdout is not None
    try:
        (supervising,) = await wait_for_lines(process.stdout, "supervising", 1)
        run_dir = Path(str(supervising["run_dir"]))
        for _ in range(200):  # both workers started (processes made; not yet serving)
            with contextlib.suppress(OSError, ValueError):
                if len(started(run_dir)) == 2:
                    break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the supervisor did not start two workers")
        process.send_signal(signal.SIGHUP)
        events: list[str] = []
        while events.count("reloaded") < 2:
            line = await asyncio.wait_for(process.stdout.readline(), 30)
            assert line, "the proxy exited"
            if line.startswith(b"{"):
                events.append(str(orjson.loads(line).get("event")))
            assert "worker_died" not in events, events
        await wait_healthy(port)
    finally:
        process.terminate()
        await process.wait()
