"""Inside LiteLLM's proxy: the engine as a LiteLLM callback (`proxy.integrations.litellm`), in
LiteLLM's own proxy server (`litellm --config ...`, from the pinned `litellm_proxy` environment of
`scripts/clients.py`) in front of a scripted upstream on loopback, beside the same LiteLLM without
the callback. A stuck run gets the instruction `repair-proxy serve` gives the same transcript; with
nothing to say the upstream gets what LiteLLM sends without the callback; a halt is LiteLLM's
reply; a call written as text is salvaged; the verdict store carries a stall to the next run."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import clients
import openai
import orjson
import pytest
from aiohttp import web
from chat import Chat, edit, test_run, view
from support import completion, free_port, policy_toml, speaking_policy

from proxy.dialects import CHAT, plan_offline
from proxy.engine.core import Engine
from proxy.settings.policy import load_policy

ROOT = Path(__file__).resolve().parents[2]
POLICY = {"patterns.stuck_same_diagnostic": {"after": 2, "action": "nudge", "escalate": [{"at": 3, "action": "halt"}]}}
"""Nudge at the second same failure, hand back at the third (the client matrix's stuck policy)."""
KEY = "sk-master"
CALL = completion(
    "", tool_calls=[{"id": "c9", "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}]
)
FENCED = '```json\n{"name": "execute_bash", "arguments": {"command": "ls -la"}}\n```'


@dataclass
class Scripted:
    """A model server on its own thread and event loop (LiteLLM's processes outlive each test's
    loop): it records every request and answers with `replies` in order, the last repeating."""

    port: int = field(default_factory=free_port)
    seen: list[bytes] = field(default_factory=list)
    replies: list[bytes] = field(default_factory=lambda: [CALL])

    def start(self) -> None:
        ready = threading.Event()
        threading.Thread(target=self._serve, args=(ready,), daemon=True).start()
        assert ready.wait(10), "the scripted upstream did not start"

    def _serve(self, ready: threading.Event) -> None:
        async def handle(request: web.Request) -> web.Response:
            body = await request.read()
            if request.method != "POST":
                return web.json_response({"object": "list", "data": [{"id": "m", "object": "model"}]})
            self.seen.append(body)
            answer = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
            return web.Response(body=answer, content_type="application/json")

        async def main() -> None:
            app = web.Application(client_max_size=1024**3)
            app.router.add_route("*", "/{tail:.*}", handle)
            runner = web.AppRunner(app)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", self.port).start()
            ready.set()
            await asyncio.Event().wait()  # until the process ends (a daemon thread)

        asyncio.run(main())


def _litellm(upstream: Scripted, tmp: Path, callback: bool) -> tuple[subprocess.Popen[bytes], str]:
    """LiteLLM's proxy server on a free port, in front of `upstream`, with or without the callback."""
    found = clients.executable("litellm_proxy")
    if found is None:
        pytest.skip("LiteLLM's proxy is not installed here (run: python scripts/clients.py)")
    config = tmp / f"litellm-{'with' if callback else 'without'}.yaml"
    lines = [
        "model_list:",
        "  - model_name: m",
        "    litellm_params:",
        "      model: openai/m",
        f"      api_base: http://127.0.0.1:{upstream.port}/v1",
        "      api_key: sk-upstream",
    ]
    if callback:
        lines += ["litellm_settings:", "  callbacks: proxy.integrations.litellm.handler"]
    config.write_text("\n".join(lines) + "\n")
    policy = tmp / "policy.toml"
    policy.write_text(policy_toml(POLICY))
    port = free_port()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp),
        "PYTHONPATH": str(ROOT),  # repair-proxy, importable where LiteLLM runs
        "LITELLM_MASTER_KEY": KEY,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no fetch of the cost map
        "REPAIR_PROXY_POLICY": speaking_policy(str(policy)),
        "REPAIR_PROXY_VERDICTS": str(tmp / "verdicts.sqlite3"),
    }
    log = (tmp / f"litellm-{port}.log").open("wb")
    program = found.parent / "litellm"
    process = subprocess.Popen(
        [str(program), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    return process, f"http://127.0.0.1:{port}"


def _wait(process: subprocess.Popen[bytes], base: str, log: Path) -> None:
    import urllib.request

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"LiteLLM exited {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{base}/health/liveliness", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"LiteLLM did not answer within 120 s:\n{log.read_text()[-3000:]}")


@dataclass
class Gateways:
    upstream: Scripted
    with_callback: str
    without: str


@pytest.fixture(scope="module")
def gateways(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateways]:
    """One upstream, LiteLLM with the callback and LiteLLM without it, started side by side."""
    tmp = tmp_path_factory.mktemp("litellm")
    upstream = Scripted()
    upstream.start()
    started = [_litellm(upstream, tmp, callback) for callback in (True, False)]
    try:
        for process, base in started:
            _wait(process, base, next(tmp.glob(f"litellm-{base.rsplit(':', 1)[1]}.log")))
        yield Gateways(upstream, started[0][1], started[1][1])
    finally:
        for process, _base in started:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def client(base: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{base}/v1", api_key=KEY, max_retries=0)


async def send(base: str, chat: Chat) -> Any:
    async with client(base) as sdk:
        return await sdk.chat.completions.create(model="m", messages=chat.messages, tools=chat.tools)  # type: ignore[arg-type]


def instructions(body: bytes) -> list[dict[str, Any]]:
    return [m for m in orjson.loads(body)["messages"] if "[repair-proxy]" in str(m.get("content"))]


async def test_a_stuck_run_gets_the_instruction_the_proxy_gives(gateways: Gateways, tmp_path: Path) -> None:
    gateways.upstream.replies = [CALL]
    chat = Chat(user="The test tests/test_parse.py::test_addition fails. Fix it, run one.", id_prefix="nudged")
    chat.turn(test_run()).turn(edit())
    await send(gateways.with_callback, chat)
    assert instructions(gateways.upstream.seen[-1]) == []
    chat.turn(test_run("@pytest_addition_b"))
    await send(gateways.with_callback, chat)
    (placed,) = instructions(gateways.upstream.seen[-1])
    policy = tmp_path / "policy.toml"
    policy.write_text(policy_toml(POLICY))
    proxy = plan_offline(Engine.of(load_policy(speaking_policy(str(policy)))), CHAT, chat.bytes(model="m"), {})
    assert proxy is not None
    assert [placed] == instructions(proxy.body) and "assert 4 == 3" in placed["content"]
    sent = orjson.loads(gateways.upstream.seen[-1])["messages"]
    assert sent.index(placed) == len(chat.messages), "right after the turn that tripped it"


async def test_with_nothing_to_say_the_upstream_gets_what_litellm_sends_without_the_callback(
    gateways: Gateways,
) -> None:
    gateways.upstream.replies = [CALL]
    chat = Chat(id_prefix="plain").turn(view()).turn(edit())
    await send(gateways.with_callback, chat)
    through_callback = gateways.upstream.seen[-1]
    await send(gateways.without, chat)
    assert through_callback == gateways.upstream.seen[-1]
    assert instructions(through_callback) == []


async def test_a_halt_is_litellms_reply_and_the_model_is_not_asked(gateways: Gateways) -> None:
    gateways.upstream.replies = [CALL]
    chat = Chat(user="The test tests/test_parse.py::test_addition fails. Fix it, halting.", id_prefix="halt")
    for step in (test_run(), edit(), test_run("@pytest_addition_b"), edit("a", "b")):
        await send(gateways.with_callback, chat.turn(step))
    asked = len(gateways.upstream.seen)
    reply = await send(gateways.with_callback, chat.turn(test_run()))
    assert len(gateways.upstream.seen) == asked
    text = reply.choices[0].message.content
    assert "INCOMPLETE" in text and "assert 4 == 3" in text


async def test_a_call_written_as_text_reaches_the_client_as_a_call(gateways: Gateways) -> None:
    gateways.upstream.replies = [completion(FENCED)]
    reply = await send(gateways.with_callback, Chat(id_prefix="salvage").turn(view()))
    (call,) = reply.choices[0].message.tool_calls or []
    assert call.function.name == "execute_bash" and orjson.loads(call.function.arguments) == {"command": "ls -la"}
    plain = await send(gateways.without, Chat(id_prefix="salvage").turn(view()))
    assert plain.choices[0].message.content == FENCED and not plain.choices[0].message.tool_calls


async def test_the_verdict_store_tells_the_next_run_of_the_task(gateways: Gateways) -> None:
    gateways.upstream.replies = [CALL]
    task = "The test tests/test_parse.py::test_addition fails. Fix it, remembering."
    one = Chat(user=task, id_prefix="first")
    for step in (test_run(), edit(), test_run("@pytest_addition_b")):
        await send(gateways.with_callback, one.turn(step))
    await send(gateways.with_callback, Chat(user=task, id_prefix="second"))
    (note,) = instructions(gateways.upstream.seen[-1])
    assert "A previous attempt at this task stalled" in note["content"]
