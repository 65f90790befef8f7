"""Real servers on loopback for the tests: a scripted OpenAI-compatible upstream, and the proxy."""

from __future__ import annotations

import asyncio
import atexit
import gc
import gzip
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import tomllib
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import aiohttp
import openai
import orjson
from aiohttp import web
from aiohttp.test_utils import TestServer
from multidict import CIMultiDict, CIMultiDictProxy

from proxy.http.runtime.tenancy import build_runtime
from proxy.http.serving.app import make_app, server_options
from proxy.http.upstream.probe import PROBE_AGENT
from proxy.settings.config import Settings, load_settings

Handler = Callable[[web.Request, bytes], Awaitable[web.StreamResponse]]

SPEAKING = {"patterns": {"stuck_same_diagnostic": {"mode": "act"}, "format_error_loop": {"mode": "act"}}}
"""What the servers these tests start run on top of their policy: the failure model's own pattern
and the format-error loop acting. Their default is shadow (it trips, logs and counts, and says nothing, until measured right on
agents its rule was not written against); the tests here are of the mechanisms they drive (nudges,
forces, hand-backs, memory, replicas, dialects), so the harness switches them on. A policy that sets a
pattern's `mode` keeps its own; `speaking=False` serves the embedded defaults as they ship."""
STUCK_ACTS = {"patterns.stuck_same_diagnostic": {"mode": "act"}, "patterns.format_error_loop": {"mode": "act"}}
"""`SPEAKING` as `policy_toml` takes it, for a test that writes its own policy file."""
_POLICIES = Path(tempfile.mkdtemp(prefix="repair-proxy-test-policies-"))
atexit.register(shutil.rmtree, _POLICIES, ignore_errors=True)


def speaking_policy(policy: str = "") -> str:
    """A policy file: `policy`'s tables (none: the embedded defaults) with `SPEAKING` laid under them."""
    table: dict[str, Any] = tomllib.loads(Path(policy).read_text()) if policy else {}
    patterns = table.setdefault("patterns", {})
    for name, options in SPEAKING["patterns"].items():
        patterns[name] = {**options, **patterns.get(name, {})}
    text = "\n".join(_toml_tables(table, ""))
    path = _POLICIES / f"{abs(hash((policy, text)))}.toml"
    path.write_text(text + "\n")
    return str(path)


def _toml_tables(table: dict[str, Any], prefix: str) -> list[str]:
    lines = [f"{k} = {toml_value(v)}" for k, v in table.items() if not isinstance(v, dict)]
    if prefix and lines:
        lines.insert(0, f"[{prefix}]")
    for key, value in table.items():
        if isinstance(value, dict):
            lines.extend(_toml_tables(value, f"{prefix}.{key}" if prefix else key))
    return lines


class Reply(NamedTuple):
    """A whole response as the agent got it (unpacks as `status, headers, body`)."""

    status: int
    headers: CIMultiDictProxy[str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


async def post(target: TestServer | str, body: bytes, path: str = "/v1/chat/completions", **headers: str) -> Reply:
    """The one test client: POST `body` to the proxy (a test server, or a base URL) and read the
    whole reply. Bodies stay as sent (a gzip reply stays gzip); JSON is the default content type."""
    url = str(target.make_url(path)) if isinstance(target, TestServer) else target.rstrip("/") + path
    async with (
        aiohttp.ClientSession(auto_decompress=False) as client,
        client.post(url, data=body, headers={"Content-Type": "application/json", **headers}) as response,
    ):
        return Reply(response.status, CIMultiDictProxy(CIMultiDict(response.headers)), await response.read())


def sdk(target: TestServer | str, api_key: str = "sk-agent", **options: Any) -> openai.AsyncOpenAI:
    """The real `openai` SDK pointed at the proxy (use as `async with sdk(proxy) as client`)."""
    base = str(target.make_url("/v1")) if isinstance(target, TestServer) else target
    return openai.AsyncOpenAI(base_url=base, api_key=api_key, max_retries=0, **options)


@dataclass
class Seen:
    method: str
    path: str
    query: str
    headers: CIMultiDictProxy[str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


def completion(content: str = "ok", tool_calls: list[dict[str, Any]] | None = None, model: str = "m") -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return orjson.dumps(
        {
            "id": "chatcmpl-up",
            "object": "chat.completion",
            "created": 1700000000,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )


def chunk_event(base: dict[str, Any], delta: dict[str, Any], finish: str | None = None) -> bytes:
    """One streamed chat chunk as a server-sent event: `base` (id, object, created, model), one choice."""
    return (
        b"data: " + orjson.dumps({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + b"\n\n"
    )


def sse_chunks(content: str = "hello", tool_call: dict[str, Any] | None = None) -> list[bytes]:
    """A realistic stream: role chunk, content pieces (or a tool call), finish, usage-only chunk, [DONE]."""
    base = {"id": "chatcmpl-up", "object": "chat.completion.chunk", "created": 1700000000, "model": "m"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return chunk_event(base, delta, finish)

    out = [b": keep-alive comment\n\n", chunk({"role": "assistant", "content": ""})]
    if tool_call is not None:
        out.append(chunk({"tool_calls": [{"index": 0, **tool_call}]}))
        out.append(chunk({}, "tool_calls"))
    else:
        out.extend(chunk({"content": piece}) for piece in content.split(" "))
        out.append(chunk({}, "stop"))
    out.append(
        b"data: "
        + orjson.dumps(
            {**base, "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}
        )
        + b"\n\n"
    )
    out.append(b"data: [DONE]\n\n")
    return out


def json_reply(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> Handler:
    async def handler(_request: web.Request, _body: bytes) -> web.StreamResponse:
        return web.Response(status=status, body=body, headers={"Content-Type": "application/json", **(headers or {})})

    return handler


def gzip_reply(body: bytes) -> Handler:
    async def handler(_request: web.Request, _body: bytes) -> web.StreamResponse:
        return web.Response(
            body=gzip.compress(body), headers={"Content-Type": "application/json", "Content-Encoding": "gzip"}
        )

    return handler


def sse_reply(
    chunks: Sequence[bytes], gap: float = 0.0, before_each: Callable[[int], Awaitable[None]] | None = None
) -> Handler:
    async def handler(request: web.Request, _body: bytes) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        for index, chunk in enumerate(chunks):
            if before_each is not None:
                await before_each(index)
            if gap:
                await asyncio.sleep(gap)
            await response.write(chunk)
        await response.write_eof()
        return response

    return handler


class Endless:
    """An upstream that streams `piece(i)` every 50 ms, 200 at most (a bounded loop), and records
    what it wrote and when it was torn down (`stopped`): for agents that leave mid-stream."""

    def __init__(self, piece: Callable[[int], bytes]) -> None:
        self.piece = piece
        self.written: list[int] = []
        self.stopped = asyncio.Event()

    async def __call__(self, request: web.Request, _body: bytes) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        try:
            for i in range(200):
                await response.write(self.piece(i))
                self.written.append(i)
                await asyncio.sleep(0.05)
        except (asyncio.CancelledError, ConnectionResetError):
            self.stopped.set()
            raise
        return response


@dataclass
class Upstream:
    """A real aiohttp server on 127.0.0.1 playing the model server; records every request but the
    proxy's probes of it (at start, `/readyz`: answered by the next reply, which they leave in
    place, or with an empty list of models)."""

    server: TestServer
    seen: list[Seen] = field(default_factory=list)
    replies: list[Handler] = field(default_factory=list)
    """Used in order, one per request; the last one repeats."""

    @property
    def base_url(self) -> str:
        return str(self.server.make_url("/v1"))

    def reply_with(self, *handlers: Handler) -> None:
        self.replies = list(handlers)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        if request.headers.get("User-Agent") == PROBE_AGENT:  # the proxy asking whether it answers
            return await (self.replies[0] if self.replies else json_reply(b'{"object": "list", "data": []}'))(
                request, body
            )
        self.seen.append(Seen(request.method, request.path, request.rel_url.raw_query_string, request.headers, body))
        handler = (
            self.replies.pop(0)
            if len(self.replies) > 1
            else (self.replies[0] if self.replies else json_reply(completion()))
        )
        return await handler(request, body)


async def start_upstream() -> Upstream:
    app = web.Application(client_max_size=1024**3)
    holder: dict[str, Upstream] = {}

    async def route(request: web.Request) -> web.StreamResponse:
        return await holder["u"].handle(request)

    app.router.add_route("*", "/{tail:.*}", route)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    upstream = Upstream(server=server)
    holder["u"] = upstream
    return upstream


TEST_BUDGET_MS = 60_000.0
"""The analysis budget of the servers these tests start: the budget is wall time, and a shared test
machine may hold a worker off the cores for hundreds of milliseconds; the mechanisms tested here are
not the budget's (its own tests set theirs)."""


async def start_proxy(
    upstream_url: str, overrides: dict[str, dict[str, Any]] | None = None, policy: str = "", speaking: bool = True
) -> TestServer:
    """The proxy on a loopback port, its policy (and each team's) under `SPEAKING` unless `speaking`
    is False."""
    merged: dict[str, Any] = {
        "upstream": {"base_url": upstream_url},
        "repair": {"policy": speaking_policy(policy) if speaking else policy},
        "store": {"verdicts": ""},
        "limits": {"analysis_budget_ms": TEST_BUDGET_MS},
    }
    for section, values in (overrides or {}).items():
        if isinstance(values, dict):
            merged.setdefault(section, {}).update(values)
        else:
            merged[section] = values
    if speaking and "policy" in (overrides or {}).get("repair", {}):
        merged["repair"]["policy"] = speaking_policy(merged["repair"]["policy"])
    if speaking and isinstance(merged.get("team"), list):
        merged["team"] = [{**t, "policy": speaking_policy(t.get("policy", ""))} for t in merged["team"]]
    settings: Settings = load_settings(None, overrides=merged)
    server = TestServer(make_app(build_runtime(settings)), host="127.0.0.1")
    options = {k: v for k, v in server_options(settings).items() if k != "handler_cancellation"}
    await server.start_server(**options)  # the test server cancels handlers itself
    return server


def toml_value(value: Any) -> str:
    """A TOML literal for the small values test policies use."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return orjson.dumps(value).decode()


def policy_toml(raw: dict[str, dict[str, Any]]) -> str:
    """A policy file's text from {section: {key: value}} (a section may be dotted,
    `"patterns.repeat_call"`, or hold tables of its own)."""
    return "\n".join(_toml_tables(raw, "")) + "\n"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def spawn_proxy(
    *args: str,
    env: dict[str, str] | None = None,
    stdout: int = asyncio.subprocess.DEVNULL,
    workers: int = 1,
    speaking: bool = True,
) -> tuple[asyncio.subprocess.Process, int]:
    """`python -m proxy serve` as a real process (`workers` of them on one port) on a free loopback
    port, with a clean environment; with no policy named (no `--config`, no `REPAIR_PROXY_POLICY`)
    and `speaking`, the embedded one under `SPEAKING`."""
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("REPAIR_PROXY_")}
    env = dict(env or {})
    if speaking and "--config" not in args and "REPAIR_PROXY_POLICY" not in env:
        env["REPAIR_PROXY_POLICY"] = speaking_policy()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "proxy",
        "serve",
        "--port",
        str(port),
        "--workers",
        str(workers),
        *args,
        env={**clean, **(env or {})},
        stdout=stdout,
        stderr=asyncio.subprocess.DEVNULL,
    )
    return process, port


async def read_json_log(stream: asyncio.StreamReader, into: list[dict[str, object]]) -> None:
    """Collect a spawned proxy's JSON log lines from its stdout, as they come, until it closes."""
    while line := await stream.readline():
        if line.startswith(b"{"):
            into.append(orjson.loads(line))


async def wait_healthy(port: int) -> None:
    """Until /healthz answers (10 s at most)."""
    async with aiohttp.ClientSession() as client:
        for _ in range(100):
            try:
                async with client.get(f"http://127.0.0.1:{port}/healthz") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError(f"the proxy on port {port} did not start")


def fresh_interpreter(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`script` run by a new Python process from the repository's root, for what is process
    state (memory, malloc's arenas); a failure shows what the script wrote to stderr."""
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", script, *args], cwd=root, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done


T = TypeVar("T")


def held_memory(build: Callable[[], T]) -> tuple[T, int]:
    """What `build` returns, and the Python memory it still holds once built: traced by
    tracemalloc, with a collection before and after, so what it made and dropped is not counted."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        built = build()
        gc.collect()
        return built, tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
