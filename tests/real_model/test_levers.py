"""`force` and `restrict` produce requests a real llama.cpp server accepts."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from chat import Chat, test_run, view
from support import policy_toml, post

pytestmark = pytest.mark.real_model


async def test_force_request_is_accepted_by_llama_cpp(make_proxy, llama_qwen: str, tmp_path: Path) -> None:
    """A stuck transcript at the force rung: tool_choice names the read tool and llama.cpp answers 200."""
    policy = tmp_path / "p.toml"
    policy.write_text(policy_toml({"patterns.stuck_same_diagnostic": {"after": 3, "action": "force", "escalate": []}}))
    proxy = await make_proxy(policy=str(policy), upstream_url=llama_qwen)
    chat = Chat().turn(test_run()).turn(test_run("@pytest_addition_b")).turn(test_run())
    status, headers, body = await post(proxy, chat.bytes(max_tokens=48, temperature=0))
    assert status == 200, body
    reply = orjson.loads(body)
    assert headers["X-Repair-Trips"] == "stuck_same_diagnostic"
    assert reply["choices"][0]["message"]["role"] == "assistant"  # type: ignore[index]


async def test_restrict_request_is_accepted_by_llama_cpp(make_proxy, llama_qwen: str, tmp_path: Path) -> None:
    """A tool removed from `tools` while earlier turns still call it: llama.cpp answers 200."""
    policy = tmp_path / "p.toml"
    policy.write_text(policy_toml({"patterns.repeat_call": {"after": 3, "action": "restrict", "escalate": []}}))
    proxy = await make_proxy(policy=str(policy), upstream_url=llama_qwen)
    chat = Chat().turn(view()).turn(view()).turn(view())
    status, headers, body = await post(proxy, chat.bytes(max_tokens=48, temperature=0))
    assert status == 200, body
    reply = orjson.loads(body)
    assert headers["X-Repair-Trips"] == "repeat_call"
    assert reply["choices"][0]["message"]["role"] == "assistant"


FRESH_TASK = [
    {
        "role": "system",
        "content": "You are an autonomous coding agent working in the repository at /tmp/repo. Use the tools to "
        "inspect files, edit them and run the tests until `python -m pytest` passes. Call exactly one tool per "
        "reply. When the tests pass, run `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`.",
    },
    {
        "role": "user",
        "content": "The test suite fails: `python -m pytest`. Fix the bug in the code (not in the tests) so that "
        "the tests pass.",
    },
]
BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a bash command in the repository.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
}


async def test_a_fresh_task_gets_a_real_call_from_llama_cpp(make_proxy, llama_qwen: str) -> None:
    """The model's first reply echoes the tools block it was shown (no call); the action gate asks
    again with the call's schema as `response_format`, llama.cpp constrains the reply to it, and
    salvage hands the agent a real call. Direct, the same request gets no call."""
    request = {"model": "m", "messages": FRESH_TASK, "tools": [BASH], "temperature": 0.7, "seed": 0, "max_tokens": 160}
    direct = await post(llama_qwen.removesuffix("/v1"), orjson.dumps(request))
    assert not orjson.loads(direct.body)["choices"][0]["message"].get("tool_calls"), "the server alone: no call"
    proxy = await make_proxy(upstream_url=llama_qwen)
    status, headers, body = await post(proxy, orjson.dumps(request))
    assert status == 200, body
    message = orjson.loads(body)["choices"][0]["message"]
    assert headers["X-Repair-Retries"].startswith("action:") and headers["X-Repair-Salvaged"] == "1"
    call = message["tool_calls"][0]["function"]
    assert call["name"] == "bash" and isinstance(orjson.loads(call["arguments"])["command"], str)
