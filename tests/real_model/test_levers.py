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
