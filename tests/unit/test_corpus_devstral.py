"""The corpus converter's mini-swe-agent 2.x text-based source (`bench/corpus/convert.py`,
`devstral_run`): the requests the agent sent, rebuilt from a made-up trajectory in its shape (the
reply it could not parse kept only in its complaint's `extra.model_response`), and read by the
proxy as calls (```mswea_bash_command fences, `<returncode>` results)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
from scenario_loader import analyse

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "corpus"))

import convert

from proxy.engine.core import Engine
from proxy.settings.policy import load_policy

FAILED = "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\nAssertionError\n</output>"
TWO_BLOCKS = "Look.\n\n```mswea_bash_command\nls\n```\n\n```mswea_bash_command\nls -la\n```"


def _call(command: str) -> dict[str, Any]:
    return {"role": "assistant", "content": f"THOUGHT: run it.\n\n```mswea_bash_command\n{command}\n```", "extra": {"actions": [{"command": command}]}}  # fmt: skip


def _trajectory() -> dict[str, Any]:
    complaint = {
        "role": "user",
        "content": "Format error:\n\n<error>\nExpected exactly 1 action, found 2.\n</error>",
        "extra": {"interrupt_type": "FormatError", "n_actions": 2, "model_response": TWO_BLOCKS},
    }
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "<pr_description>Fix it.</pr_description>"},
        complaint,
    ]
    for _ in range(4):
        messages += [_call("python reproduce.py"), {"role": "user", "content": FAILED}]
    messages.append({"role": "exit", "content": "", "extra": {"exit_status": "LimitsExceeded"}})
    info = {"mini_version": "2.2.5", "exit_status": "LimitsExceeded", "config": {"model": {"model_name": "hosted_vllm/Devstral"}}}  # fmt: skip
    return {"info": info, "messages": messages, "trajectory_format": "mini-swe-agent-1.1"}


def test_each_reply_is_a_request_and_the_unparsed_one_comes_back_from_the_complaint() -> None:
    built = convert.devstral_run("a-x__y-1", _trajectory(), False)
    record = built.record()
    pool = record["pool"]
    requests = record["requests"]
    assert len(requests) == 5 and built.format_errors == 1
    first = requests[0]
    assert [pool[i]["role"] for i in first["messages"]] == ["system", "user"]
    assert pool[first["reply"]] == {"role": "assistant", "content": TWO_BLOCKS}
    assert [pool[i]["content"] for i in record["complaints"]] == [_trajectory()["messages"][2]["content"]]
    # The next request carries the complaint, not the reply it complains of; no message keeps `extra`.
    assert [pool[i]["role"] for i in requests[1]["messages"]] == ["system", "user", "user"]
    assert all("extra" not in message for message in pool)
    assert record["protocol"] == "text" and record["scaffold"].startswith("mini-swe-agent")


def test_the_proxy_reads_the_runs_calls_and_trips_on_the_repeated_failure() -> None:
    record = convert.devstral_run("a-x__y-1", _trajectory(), False).record()
    engine = Engine.of(load_policy("mini_swe_agent"))
    names: list[str] = []
    for request in record["requests"]:
        body = orjson.dumps({"model": "m", "messages": [record["pool"][i] for i in request["messages"]]})
        planned = analyse(engine, body)
        assert planned is not None
        names += [trip.pattern.name for trip in planned.decision.new_trips]
    assert "repeat_failed_call" in names or "stuck_same_diagnostic" in names, names
