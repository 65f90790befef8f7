"""`repair-proxy serve` as a real process: JSON logs, secrets redacted, graceful drain on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path

import aiohttp
import orjson
from support import Upstream, sse_reply


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_ready(port: int) -> None:
    async with aiohttp.ClientSession() as client:
        for _ in range(100):  # 10 s at most
            try:
                async with client.get(f"http://127.0.0.1:{port}/healthz") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError("the proxy did not start")


async def test_serve_logs_json_drains_streams_and_exits_cleanly(upstream: Upstream, tmp_path: Path) -> None:
    """SIGTERM mid-stream: the stream finishes, the process exits 0, each request logged once as JSON without secrets."""
    chunks = [b'data: {"n": %d}\n\n' % i for i in range(8)] + [b"data: [DONE]\n\n"]
    upstream.reply_with(sse_reply(chunks, gap=0.15))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPAIR_PROXY_")}
    env["REPAIR_PROXY_VERDICTS"] = str(tmp_path / "verdicts.sqlite3")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "proxy",
        "serve",
        "--port",
        str(port),
        "--upstream",
        upstream.base_url,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await wait_ready(port)
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
        code = await asyncio.wait_for(process.wait(), 20)
        assert code == 0
        out = (await process.stdout.read()).decode()  # type: ignore[union-attr]
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert "sk-very-secret" not in out
    events = [orjson.loads(line) for line in out.splitlines() if line.startswith("{")]
    requests = [e for e in events if e["event"] == "request"]
    assert len(requests) == 1
    line = requests[0]
    assert (line["method"], line["path"], line["status"]) == ("POST", "/v1/chat/completions", 200)
    for key in ("upstream_ms", "overhead_ms", "conversation", "team"):
        assert key in line
    assert "purple-elephant-prompt" not in out  # prompt text is never logged by default
