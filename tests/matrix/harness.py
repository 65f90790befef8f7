"""The client matrix's parts: a scripted model that answers any dialect the way a stuck coding
model would, a tap that records what a client sends before the proxy sees it, and the runner
that starts a real client (in its own environment) against them.

    client -> tap (records the client's bytes) -> proxy -> model (records what reached it)

With nothing injected, what the model received must be what the client sent, byte for byte.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web
from aiohttp.test_utils import TestServer
from replies import reply_bytes, send

ROOT = Path(__file__).resolve().parents[2]
DRIVERS = Path(__file__).resolve().parent / "drivers"
REPO = ROOT / "bench" / "repos" / "calc"
CHECK = "python -m pytest -q"
HOP_BY_HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}
EDIT = "calc.py\n```python\n<<<<<<< SEARCH\ndef mul(a, b):\n=======\ndef mul(a, b):\n>>>>>>> REPLACE\n```\n"
"""An aider edit that applies and changes nothing that matters: the test keeps failing."""


@dataclass
class Recorded:
    path: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def _dialect(path: str) -> str:
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/messages"):
        return "anthropic"
    return "ollama" if path.startswith("/api/") else "chat"


def _run_tool(tools: list[Any]) -> tuple[str, dict[str, Any]] | None:
    """A call of the offered tool that runs a command, running the failing check."""
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        name, params = function.get("name"), function.get("parameters") or function.get("input_schema") or {}
        properties = params.get("properties") or {} if isinstance(params, dict) else {}
        for arg in ("command", "cmd", "code"):
            if arg in properties and isinstance(name, str):
                kind = properties[arg].get("type")
                value: Any = ["bash", "-lc", CHECK] if kind == "array" else CHECK
                if arg == "code":
                    value = f"import subprocess\nprint(subprocess.run({CHECK.split()!r}, capture_output=True, text=True).stdout)"
                return name, {arg: value}
    return None


def _said(body: dict[str, Any]) -> list[str]:
    """What each user message of a chat, Responses or Ollama request says, in order (as JSON)."""
    items = body.get("messages") or body.get("input") or []
    if isinstance(items, str):
        return [items]
    return [orjson.dumps(m.get("content")).decode() for m in items if isinstance(m, dict) and m.get("role") == "user"]


def _text_of(body: dict[str, Any]) -> str:
    return orjson.dumps(body.get("messages") or body.get("input") or body.get("instructions") or "").decode()


@dataclass
class Model:
    """Answers like a model stuck on one failing test: with tools, it runs the check again and
    again; to aider (no tools, SEARCH/REPLACE edits) it sends the same edit; else it says hello.
    It speaks the dialect of the path it is asked on (Messages for Claude Code)."""

    seen: list[Recorded] = field(default_factory=list)
    server: TestServer | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.seen.append(Recorded(request.path, body, dict(request.headers)))
        if request.method == "GET":
            models = {"object": "list", "data": [{"id": "m", "object": "model", "created": 0, "owned_by": "test"}]}
            if request.path.startswith("/api/"):
                models = {"models": [{"name": "m", "model": "m"}]}
            return web.json_response(models)
        data = orjson.loads(body) if body else {}
        dialect = _dialect(request.path)
        stream = bool(data.get("stream", dialect == "ollama"))
        call = (
            _run_tool(data.get("tools") or []) if any("fix calc.py" in said for said in _said(data)) else None
        )  # only on the task
        text = ""
        if call is None:  # aider: an edit when it is asked to fix the test or shown it failing
            asked = "SEARCH/REPLACE" in _text_of(data) and "pytest" in (_said(data) or [""])[-1]
            text = EDIT if asked else "Hello! How can I help?"
        turn = f"{len(self.seen)}_".encode()  # a real model's call ids differ from turn to turn
        pieces = [  # Claude Code joins the replies that share a message id into one
            p.replace(b"call_up", b"call_" + turn).replace(b"fc_up", b"fc_" + turn).replace(b"msg_up", b"msg_" + turn)
            for p in reply_bytes(dialect, text, [call] if call else [], stream)
        ]
        return await send(request, dialect, pieces, stream)

    async def start(self) -> str:
        self.server = await _serve(self.handle)
        return str(self.server.make_url("/v1"))


@dataclass
class Tap:
    """Records each request as the client sent it, then passes it on to `target` and relays the answer."""

    target: str
    """The proxy's root URL."""
    seen: list[Recorded] = field(default_factory=list)
    answers: list[dict[str, str]] = field(default_factory=list)
    """The proxy's response headers, one per request."""
    server: TestServer | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.seen.append(Recorded(request.path, body, dict(request.headers)))
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        url = self.target.rstrip("/") + str(request.rel_url)
        timeout = aiohttp.ClientTimeout(total=60)
        async with (
            aiohttp.ClientSession(timeout=timeout, auto_decompress=False) as session,
            session.request(request.method, url, data=body, headers=headers) as upstream,
        ):
            self.answers.append(dict(upstream.headers))
            out = web.StreamResponse(
                status=upstream.status,
                headers={k: v for k, v in upstream.headers.items() if k.lower() not in HOP_BY_HOP},
            )
            await out.prepare(request)
            async for chunk in upstream.content.iter_any():
                await out.write(chunk)
            await out.write_eof()
            return out

    async def start(self) -> str:
        self.server = await _serve(self.handle)
        return str(self.server.make_url(""))


async def _serve(handle: Any) -> TestServer:
    """A server on 127.0.0.1 answering every path with `handle`."""
    app = web.Application(client_max_size=1024**3)
    app.router.add_route("*", "/{tail:.*}", handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    return server


def workdir(tmp: Path) -> Path:
    """A copy of a small repository whose test fails (`add` subtracts)."""
    target = tmp / "calc"
    shutil.copytree(REPO, target, ignore=shutil.ignore_patterns("stuck.json", "__pycache__"))
    return target


async def drive(program: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> dict[str, Any]:
    """Run a driver (or a client's own command line) and read the JSON it prints last."""
    process = await asyncio.create_subprocess_exec(
        *program,
        cwd=cwd,
        env={**{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "REPAIR_PROXY_"))}, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"{program[:3]} did not end within {timeout:g}s") from None
    text = out.decode(errors="replace")
    lines = [line for line in text.splitlines() if line.startswith("{")]
    if process.returncode != 0 or not lines:
        raise AssertionError(
            f"{program[:3]} exited {process.returncode}\nstdout:\n{text[-3000:]}\nstderr:\n{err.decode(errors='replace')[-3000:]}"
        )
    result: dict[str, Any] = json.loads(lines[-1])
    result["_stdout"] = text
    return result


def driver(name: str) -> str:
    return str(DRIVERS / f"{name}.py")


PYTHON = sys.executable
