"""`repair-proxy serve` as a real process: JSON logs, secrets redacted, graceful drain on SIGTERM."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import aiohttp
import orjson
import pytest
from support import Upstream, spawn_proxy, sse_reply, wait_healthy


@pytest.mark.parametrize("workers", [1, 2])
async def test_serve_logs_json_drains_streams_and_exits_cleanly(
    upstream: Upstream, tmp_path: Path, workers: int
) -> None:
    """SIGTERM mid-stream: the stream finishes, the process (every worker) exits 0, each request
    logged once as JSON without secrets."""
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
