"""How far a chat request travels through the proxy's own code: the function stops and files on
its route, counted by tracing, for one non-streamed and one streamed chat request.

A real proxy (the app `make_app` builds, on an aiohttp test server) in front of a loopback
upstream that answers with a tool call, as JSON or as a stream. Each request carries tools, so
the reply stage watches its reply (salvage armed): the route is the handler, the pipeline, the
analysis, the upstream and back through the reply stage. A first request of each kind warms the
process (imports, the tokenizer, caches); the second, of a new conversation, is traced with
`sys.setprofile` from the moment the client sends it until its last byte is read.

Counted, over the proxy's modules (`proxy/`), and over its HTTP layer (`proxy/http/`) alone:

    stops     distinct functions entered (a coroutine resumed is not a new stop)
    files     distinct modules those functions are in
    returns   entries into a module the route had left for another before (consecutive
              entries in one module count once)

The bound (issue #53) is on the route outside the engine: at most 80 stops and 26 files per
request (`--check 80 26`); `tests/integration/test_route_stops.py` holds it (issue #64). Measured
on this machine:

    commit    request        outside the engine      proxy/http/ alone
    f9fdefc   non-streamed   87 stops, 21 files      74 stops, 17 files
              streamed       91 stops, 21 files      67 stops, 17 files
    b7e2f50   non-streamed   73 stops, 23 files      60 stops, 19 files
              streamed       80 stops, 21 files      56 stops, 17 files
    a96372d   non-streamed   86 stops, 26 files      71 stops, 21 files
              streamed       97 stops, 25 files      71 stops, 20 files
    aa86512   non-streamed   76 stops, 25 files      63 stops, 21 files
              streamed       80 stops, 25 files      61 stops, 20 files

Run: python bench/route_stops.py [--check STOPS FILES]   (from the repository root, any commit:
the app is found where it lives then); `--check` exits 1 when either request passes more stops
or files than given (over proxy/, the analysis in the engine left out: see `ENGINE`).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import io
import os
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web
from aiohttp.test_utils import TestServer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PACKAGE = str(ROOT / "proxy") + "/"
HTTP = PACKAGE + "http/"
ENGINE = PACKAGE + "engine/"
"""The engine's analysis (folding, detectors, the plan) is not the route's: its work is the same
whatever the HTTP layer does; counted apart."""

BESIDE = ("proxy/http/runtime/stalls.py", "look")
"""The event-loop watcher's tick: a task on a timer beside every request, not on any request's
route. Counted, it made the streamed request's stops vary by 2 between runs (`Watch.seen`, `look`:
80 or 82 at 62ffdd4), as the tick fell inside the traced request or not; left out with what it calls."""

_APP = ("proxy.http.serving.app", "proxy.http.app")
_TENANCY = ("proxy.http.runtime.tenancy", "proxy.http.tenancy")
_LOGS = ("proxy.http.observe.logs", "proxy.http.logs")

CALL = {"id": "call_x", "type": "function", "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'}}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "execute_bash",
            "description": "Run a shell command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    }
]


def _completion() -> bytes:
    message = {"role": "assistant", "content": None, "tool_calls": [CALL]}
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
    usage = {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}
    return orjson.dumps(
        {"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [choice], "usage": usage}
    )


def _stream() -> list[bytes]:
    base = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return (
            b"data: "
            + orjson.dumps({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            + b"\n\n"
        )

    out = [event({"role": "assistant", "content": ""})]
    out += [event({"content": word + " "}) for word in ("let", "me", "look", "at", "the", "files")]
    out += [event({"tool_calls": [{"index": 0, **CALL}]}), event({}, "tool_calls"), b"data: [DONE]\n\n"]
    return out


async def _upstream(request: web.Request) -> web.StreamResponse:
    body = await request.read()
    if not orjson.loads(body).get("stream"):
        return web.Response(body=_completion(), content_type="application/json")
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for chunk in _stream():
        await response.write(chunk)
    await response.write_eof()
    return response


def _request(conversation: int, stream: bool) -> bytes:
    messages = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": f"Task {conversation}: list the files of the repository."},
    ]
    return orjson.dumps({"model": "m", "messages": messages, "tools": TOOLS, "stream": stream})


@dataclass
class Route:
    """The proxy's functions one request entered, in order of first entry."""

    stops: dict[tuple[str, int, str], None] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    """The module of each entry (a coroutine resumed included), consecutive repeats folded."""

    beside: int = 0
    """Depth inside the process's periodic work (`BESIDE`), which no request's route holds."""

    def profile(self, frame: types.FrameType, event: str, _arg: object) -> None:
        code = frame.f_code
        if code.co_filename.endswith(BESIDE[0]) and code.co_qualname == BESIDE[1]:
            self.beside += 1 if event == "call" else -1 if event == "return" else 0
            return
        if event != "call" or self.beside > 0:
            return
        if not code.co_filename.startswith(PACKAGE):
            return
        self.stops.setdefault((code.co_filename, code.co_firstlineno, code.co_qualname), None)
        if not self.files or self.files[-1] != code.co_filename:
            self.files.append(code.co_filename)

    def counted(self, keep: Callable[[str], bool]) -> tuple[int, int, int]:
        stops = [s for s in self.stops if keep(s[0])]
        files = [f for f in self.files if keep(f)]
        folded = [f for i, f in enumerate(files) if i == 0 or files[i - 1] != f]
        seen: set[str] = set()
        returns = 0
        for name in folded:
            returns += name in seen
            seen.add(name)
        return len(stops), len({s[0] for s in stops}), returns


def _found(names: tuple[str, ...]) -> Any:
    """The first of `names` that imports: where the module lives at this commit."""
    for name in names[:-1]:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return importlib.import_module(names[-1])


_SINK = io.TextIOWrapper(open(os.devnull, "wb"))  # noqa: SIM115 - the process's life
"""Where the traced proxy's log lines go."""


def _quiet_logs() -> None:
    """The proxy's own log configuration (its processors are on the route), writing nowhere."""
    stdout = sys.stdout
    sys.stdout = _SINK
    try:
        _found(_LOGS).configure_logging("info")
    finally:
        sys.stdout = stdout


async def _send(url: str, body: bytes) -> tuple[int, bytes]:
    async with (
        aiohttp.ClientSession() as client,
        client.post(url, data=body, headers={"Content-Type": "application/json"}) as got,
    ):
        return got.status, await got.read()


async def measure() -> dict[str, Route]:
    from proxy.settings.config import load_settings  # noqa: PLC0415 - after the path is set

    app, tenancy = _found(_APP), _found(_TENANCY)
    make_app, server_options, build_runtime = app.make_app, app.server_options, tenancy.build_runtime
    _quiet_logs()
    upstream_app = web.Application()
    upstream_app.router.add_post("/v1/chat/completions", _upstream)
    upstream = TestServer(upstream_app, host="127.0.0.1")
    await upstream.start_server()
    overrides = {"upstream": {"base_url": str(upstream.make_url("/v1"))}, "store": {"verdicts": ""}}
    settings = load_settings(None, overrides=overrides)
    proxy = TestServer(make_app(build_runtime(settings), environ={}), host="127.0.0.1")
    options = {k: v for k, v in server_options(settings).items() if k != "handler_cancellation"}
    await proxy.start_server(**options)
    url = str(proxy.make_url("/v1/chat/completions"))
    routes: dict[str, Route] = {}
    try:
        for conversation, (name, stream) in enumerate((("non-streamed", False), ("streamed", True))):
            status, _ = await _send(url, _request(100 + conversation, stream))  # warm-up
            assert status == 200, status
            route = Route()
            sys.setprofile(route.profile)
            try:
                status, body = await _send(url, _request(200 + conversation, stream))
            finally:
                sys.setprofile(None)
            assert status == 200 and b"execute_bash" in body, (status, body[:200])
            routes[name] = route
    finally:
        await proxy.close()
        await upstream.close()
    return routes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", nargs=2, type=int, metavar=("STOPS", "FILES"))
    args = parser.parse_args()
    routes = asyncio.run(measure())
    scopes = {
        "proxy/ (no engine)": lambda f: not f.startswith(ENGINE),
        "proxy/ (all)": lambda f: True,
        "proxy/http/": lambda f: f.startswith(HTTP),
    }
    over = False
    print(f"{'request':<14}{'scope':<22}{'stops':>7}{'files':>7}{'returns':>9}")
    for name, route in routes.items():
        for scope, keep in scopes.items():
            stops, files, returns = route.counted(keep)
            print(f"{name:<14}{scope:<22}{stops:>7}{files:>7}{returns:>9}")
            if args.check and scope == "proxy/ (no engine)":
                over = over or stops > args.check[0] or files > args.check[1]
    if over:
        sys.exit(1)


if __name__ == "__main__":
    main()
