"""Anthropic Messages on a real llama.cpp server: the `anthropic` SDK through the proxy to
llama-server's own `/v1/messages`, with a Claude-Code-shaped stuck run whose instruction the proxy
places as a text block after the turn's `tool_result` (llama.cpp converts Messages to its chat
template itself: the server must take the instructed request and answer it as a Message)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import pytest
from claude_code import ClaudeCode, edit, pytest_run
from support import policy_toml

pytestmark = pytest.mark.real_model


async def test_a_stuck_claude_code_run_is_instructed_and_the_real_server_answers_a_message(
    make_proxy: Any, llama_smollm: str, tmp_path: Path
) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text('extends = "claude_code"\n' + policy_toml({"patterns.stuck_same_diagnostic": {"mode": "act"}}))
    proxy = await make_proxy(policy=str(policy), upstream_url=llama_smollm, speaking=False)
    run = ClaudeCode(model="smollm")
    for step in (pytest_run(), edit(), pytest_run(), edit("a + b", "a + b + 0"), pytest_run()):
        run.turn(step)
    body = run.body(max_tokens=64)
    del body["stream"], body["thinking"], body["metadata"]
    async with (
        anthropic.AsyncAnthropic(base_url=str(proxy.make_url("")), api_key="sk-dummy", max_retries=0) as sdk,
        sdk.messages.stream(**body) as stream,
    ):
        message = await stream.get_final_message()
        assert stream.response.headers["X-Repair-Trips"] == "stuck_same_diagnostic"
    assert message.type == "message" and message.role == "assistant"
    assert message.content and message.stop_reason in ("end_turn", "tool_use", "max_tokens")
