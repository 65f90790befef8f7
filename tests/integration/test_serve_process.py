"""`repair-proxy serve` as a real process: JSON logs, secrets redacted, graceful drain on SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

import aiohttp
import orjson
import pytest
from support import Upstream, spawn_proxy, sse_reply, wait_healthy

from proxy.cli.serving import DUPLICATE_SIGNAL_SECONDS
from proxy.http.runtime.rundir import started


@pytest.mark.parametrize("everyone", [False, True], ids=["supervisor", "every-process"])
@pytest.mark.parametrize("workers", [1, 2])
async def test_serve_logs_json_drains_streams_and_exits_cleanly(
    upstream: Upstream, tmp_path: Path, workers: int, everyone: bool
) -> None:
    """SIGTERM mid-stream: the stream finishes, the process (every worker) exits 0, each request
    logged once as JSON without secrets. `everyone`: every process of the set gets SIGTERM, as
    systemd stops a service (and a Ctrl-C in a terminal), so each worker gets it twice, once
    from the supervisor: the second is ignored, the drain goes on (one process: twice too)."""
    chunks = [b'data: {"n": %d}\n\n' % i for i in range(8)] + [b"data: [DONE]\n\n"]
    upstream.reply_with(sse_reply(chunks, gap=0.15))
    process, port = await spawn_proxy(
        "--upstream",
        upstream.base_url,
        env={"REPAIR_PROXY_VERDICTS": str(tmp_path / "verdicts.sqlite3")},
        stdout=asyncio.subprocess.PIPE,
        workers=workers,
    )
    assert process.stdout is not None
    early: list[bytes] = []
    later: asyncio.Task[bytes] | None = None
    try:
        await wait_healthy(port)
        while sum(b'"listening"' in line for line in early) < workers:  # every worker, not only the first
            early.append(await asyncio.wait_for(process.stdout.readline(), 20))
        later = asyncio.create_task(process.stdout.read())  # drained meanwhile: a full pipe would hold the process
        async with (
            aiohttp.ClientSession() as client,
            client.post(
                f"http://127.0.0.1:{port}/v1/chat/completions",
                data=b'{"model": "m", "stream": true, "messages": [{"role": "user", "content": "purple-elephant-prompt"}]}',
                headers={"Authorization": "Bearer sk-very-secret"},
            ) as response,
        ):
            first = await response.content.readany()
            process.send_signal(signal.SIGTERM)
            if everyone:
                first += await response.content.readany()  # the first signal's drain has begun
                for pid in _workers(early) or [process.pid]:
                    with contextlib.suppress(ProcessLookupError):  # a worker with nothing to drain is gone
                        os.kill(pid, signal.SIGTERM)
            rest = await response.read()
        assert first + rest == b"".join(chunks)
        try:
            code = await asyncio.wait_for(process.wait(), 20)
        except TimeoutError:
            process.kill()
            await process.wait()
            said = (b"".join(early) + await later).decode(errors="replace")
            raise AssertionError(f"still running 20 s after SIGTERM; it logged:\n{said}") from None
        assert code == 0
        out = (b"".join(early) + await later).decode()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        if later is not None and not later.done():
            later.cancel()
    assert "sk-very-secret" not in out
    events = [orjson.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert sum(e["event"] == "listening" for e in events) == workers
    exits = [e for e in events if e["event"] == "worker_exited"]  # the supervisor says how each ended
    assert [e["code"] for e in exits] == ([0] * workers if workers > 1 else [])
    requests = [e for e in events if e["event"] == "request"]
    assert len(requests) == 1
    line = requests[0]
    assert (line["method"], line["path"], line["status"]) == ("POST", "/v1/chat/completions", 200)
    for key in ("upstream_ms", "overhead_ms", "conversation", "team"):
        assert key in line
    assert "purple-elephant-prompt" not in out  # prompt text is never logged by default


def _workers(logged: list[bytes]) -> list[int]:
    """The pids of a supervisor's workers, from the run directory its first line names."""
    for line in logged:
        if b'"supervising"' in line:
            run_dir = Path(orjson.loads(line)["run_dir"])
            return list(started(run_dir).values())
    return []


async def test_a_stop_asked_again_after_a_while_stops_at_once(upstream: Upstream, tmp_path: Path) -> None:
    """A second SIGTERM well after the first (a person pressing Ctrl-C again) is not a duplicate
    delivery: the worker stops without waiting for its stream (the must-not side of ignoring
    the second signal of the pair above)."""
    chunks = [b'data: {"n": %d}\n\n' % i for i in range(60)] + [b"data: [DONE]\n\n"]
    upstream.reply_with(sse_reply(chunks, gap=0.15))  # 9 s of stream
    process, port = await spawn_proxy("--upstream", upstream.base_url, env={"REPAIR_PROXY_VERDICTS": ""})
    try:
        await wait_healthy(port)
        async with (
            aiohttp.ClientSession() as client,
            client.post(
                f"http://127.0.0.1:{port}/v1/chat/completions",
                data=b'{"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]}',
            ) as response,
        ):
            got = await response.content.readany()
            process.send_signal(signal.SIGTERM)
            await asyncio.sleep(DUPLICATE_SIGNAL_SECONDS + 0.5)
            process.send_signal(signal.SIGTERM)
            with contextlib.suppress(aiohttp.ClientPayloadError):  # the connection goes mid-stream
                got += await response.read()
        code = await asyncio.wait_for(process.wait(), 20)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert code != 0
    assert got != b"".join(chunks) and not got.endswith(b"data: [DONE]\n\n")
