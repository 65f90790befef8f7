"""`repair-proxy demo`: a stuck agent, the proxy, and a scripted model, all on loopback.

Nothing to install beyond the package: a scripted upstream plays the model (it keeps
proposing the same fix and re-running the test), a scripted agent plays the tools (the test
fails the same way after every edit), and the real proxy sits between them. Each turn prints
what the agent did, what the proxy folded, what tripped and what it injected, up to the
incomplete hand-back.

The failure model's pattern (`stuck_same_diagnostic`) runs in shadow by default: on a real agent it
counts and says nothing until a team switches it on. The demo shows what it does switched on, with a
policy of one line (`[patterns.stuck_same_diagnostic] mode = "act"`), and says so.
"""

from __future__ import annotations

import asyncio
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from proxy.http.runtime.tenancy import build_runtime
from proxy.http.serving.app import make_app
from proxy.settings.config import load_settings

__all__ = ["demo", "run_demo"]

TEST_OUTPUT = """============================= test session starts ==============================
collected 4 items

tests/test_parse.py .F..                                                 [100%]

=================================== FAILURES ===================================
    def test_addition():
>       assert parse("1 + 2") == 3
E       AssertionError: assert 4 == 3

tests/test_parse.py:12: AssertionError
FAILED tests/test_parse.py::test_addition - AssertionError: assert 4 == 3
========================= 1 failed, 3 passed in {t}s ==========================
[Command finished with exit code 1]"""
TEST_CALL = ("execute_bash", {"command": "cd /workspace && python -m pytest tests/test_parse.py"})
FIXES = ["a + b + 0", "(a + b)", "int(a) + int(b)", "a + b", "sum([a, b])", "b + a"]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "execute_bash",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "str_replace_editor",
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string"},
                    "path": {"type": "string"},
                    "old_str": {"type": "string"},
                    "new_str": {"type": "string"},
                    "view_range": {"type": "array"},
                },
            },
        },
    },
]
MAX_TURNS = 24


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _scripted_model() -> web.Application:
    """Always the same plan: run the test; on a failure, try another tweak of parse.py."""
    turn = 0

    async def chat(request: web.Request) -> web.Response:
        nonlocal turn
        turn += 1
        data = await request.json()
        last = data["messages"][-1]
        if (last.get("role") == "tool" and "FAILED" in str(last.get("content"))) or turn % 2 == 0:
            fix = FIXES[(turn // 2) % len(FIXES)]
            name, args = (
                "str_replace_editor",
                {
                    "command": "str_replace",
                    "path": "/workspace/src/parse.py",
                    "old_str": "return a + b + 1",
                    "new_str": f"return {fix}",
                },
            )
        else:
            name, args = TEST_CALL
        call = {
            "id": f"call_demo_{turn}",
            "type": "function",
            "function": {"name": name, "arguments": orjson.dumps(args).decode()},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        body = {
            "id": f"chatcmpl-demo-{turn}",
            "object": "chat.completion",
            "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        }
        return web.json_response(body)

    async def models(_request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)  # asked once when the proxy starts
    return app


def _run_tool(name: str, arguments: dict[str, Any], turn: int) -> str:
    if name == "execute_bash":
        return TEST_OUTPUT.replace("{t}", f"0.{20 + turn % 9}")
    return f"The file {arguments.get('path')} has been edited. Review the changes and make sure they are as expected."


async def _serve(app: web.Application, port: int) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner


POLICY = '[patterns.stuck_same_diagnostic]\nmode = "act"\n'
"""The demo's policy: the embedded defaults, with the failure model's pattern acting."""


async def demo(out: Callable[[str], None]) -> int:
    with tempfile.TemporaryDirectory(prefix="repair-proxy-demo-") as folder:
        policy = Path(folder) / "policy.toml"
        policy.write_text(POLICY)
        return await _demo(out, str(policy))


async def _demo(out: Callable[[str], None], policy: str) -> int:
    model_port, proxy_port = _free_port(), _free_port()
    settings = load_settings(
        None,
        overrides={
            "upstream": {"base_url": f"http://127.0.0.1:{model_port}/v1"},
            "store": {"verdicts": ""},
            "repair": {"policy": policy},
        },
    )
    runtime = build_runtime(settings)
    proxy_app = make_app(runtime)
    runners = [await _serve(_scripted_model(), model_port), await _serve(proxy_app, proxy_port)]
    cache = runtime.shared.cache
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent working in /workspace."},
        {"role": "user", "content": "tests/test_parse.py::test_addition fails. Fix it."},
    ]
    out(f"scripted model on 127.0.0.1:{model_port}, repair-proxy on 127.0.0.1:{proxy_port}")
    out('policy: the defaults, with stuck_same_diagnostic switched from shadow to act (mode = "act")\n')
    try:
        async with aiohttp.ClientSession() as client:
            for turn in range(1, MAX_TURNS + 1):
                body = {"model": "scripted", "messages": messages, "tools": TOOLS}
                async with client.post(f"http://127.0.0.1:{proxy_port}/v1/chat/completions", json=body) as response:
                    headers = response.headers
                    reply = await response.json()
                conversation = headers.get("X-Repair-Conversation", "")
                state = cache.get(("default", conversation))
                if state is not None and turn > 1:
                    r = state.repair
                    out(
                        f"        folded: class={r.last_diagnostic_class.value if r.last_diagnostic_class else None} "
                        f"streak={r.same_diagnostic_streak} write_epoch={r.write_epoch} reverify_owed={r.reverify_owed}"
                    )
                if trips := headers.get("X-Repair-Trips"):
                    actions = (
                        [f"{t.pattern.name} -> {t.action.value}" for t in state.trips if t.turn == turn - 1]
                        if state
                        else []
                    )
                    out(f"        TRIP {', '.join(actions) or trips}")
                    for note in (m for m in (state.injections if state else ()) if m.turn == turn - 1):
                        out(
                            "        injected ("
                            + note.placement.value
                            + "):\n          "
                            + note.text.replace("\n", "\n          ")
                        )
                if headers.get("X-Repair-Outcome") == "incomplete":
                    text = reply["choices"][0]["message"]["content"]
                    out("\nHAND-BACK (the run ends as incomplete):\n  " + text.replace("\n", "\n  "))
                    out(f"  X-Repair-Current-Failure: {headers.get('X-Repair-Current-Failure')}")
                    return turn - 1
                message = reply["choices"][0]["message"]
                call = message["tool_calls"][0]
                name, arguments = call["function"]["name"], orjson.loads(call["function"]["arguments"])
                result = _run_tool(name, arguments, turn)
                shown = (
                    arguments.get("command")
                    if name == "execute_bash"
                    else f"{arguments.get('command')} {arguments.get('path')} -> {arguments.get('new_str')!r}"
                )
                outcome = "FAILED test_addition (assert 4 == 3)" if "FAILED" in result else "ok"
                out(f"turn {turn:2d}  {name}: {shown}\n        result: {outcome}")
                messages.append(message)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    finally:
        for runner in reversed(runners):
            await runner.cleanup()
    out(f"\n(no hand-back within {MAX_TURNS} turns)")
    return MAX_TURNS


def run_demo(out: Callable[[str], None] = print) -> int:
    """Run the demo; returns the turn the run was handed back after."""
    return asyncio.run(demo(out))
