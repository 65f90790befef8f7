"""The held-edit probe (`bench/held_edit.py`) against a scripted model server on loopback: it
asks for the proxy's own retry at the vowels stuck point, held and then free, and judges each
reply by applying it to a copy of the repository and running its tests (a copy of the held line,
which only the free arm allows, changes nothing)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from support import Upstream, json_reply

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import held_edit


def _call(new_str: str) -> bytes:
    arguments = {"command": "str_replace", "path": "/anywhere/vowels.py", "old_str": OLD, "new_str": new_str}
    content = json.dumps({"name": "str_replace_editor", "arguments": arguments})
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()


OLD = 'VOWELS = "aeio"'
FIXED = 'VOWELS = "aeiou"'


async def test_the_probe_sends_the_held_retry_then_the_free_one_and_judges_each_by_the_tests(
    upstream: Upstream, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream.reply_with(json_reply(_call(FIXED)), json_reply(_call(OLD)))
    base = upstream.base_url.removesuffix("/v1")
    monkeypatch.setattr(sys, "argv", ["held_edit.py", "--upstream", base, "--seeds", "1"])
    await asyncio.to_thread(held_edit.main)
    out = capsys.readouterr().out
    assert "held: 1/1 calls, 1/1 changed the line, 1/1 tests pass" in out
    assert "free: 1/1 calls, 0/1 changed the line, 0/1 tests pass" in out
    held, free = (json.loads(seen.body) for seen in upstream.seen)
    properties = [b["response_format"]["json_schema"]["schema"]["properties"]["arguments"]["properties"] for b in (held, free)]  # fmt: skip
    assert OLD in properties[0]["old_str"]["enum"] and "pattern" in properties[0]["new_str"]
    assert properties[1]["new_str"] == {"type": "string"}  # the copy the held pattern turns down
    assert (
        held["tool_choice"] == free["tool_choice"] == {"type": "function", "function": {"name": "str_replace_editor"}}
    )


def _sed(command: str) -> bytes:
    content = json.dumps({"name": "bash", "arguments": {"command": command}})
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()


async def test_in_bash_style_the_probe_sends_the_held_sed_then_one_with_its_text_to_replace_free(
    upstream: Upstream, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream.reply_with(json_reply(_sed("sed -i 's/pop(0)/pop()/' stack.py")), json_reply(_sed("sed -i 's/push/append/' stack.py")))  # fmt: skip
    base = upstream.base_url.removesuffix("/v1")
    argv = [
        "held_edit.py",
        "--upstream",
        base,
        "--seeds",
        "1",
        "--repo",
        "stack",
        "--style",
        "bash",
        "--gate",
        "finish",
    ]
    monkeypatch.setattr(sys, "argv", argv)
    await asyncio.to_thread(held_edit.main)
    out = capsys.readouterr().out
    assert "held: 1/1 calls, 1/1 changed the file, 1/1 tests pass" in out
    assert "free: 1/1 calls, 1/1 changed the file, 0/1 tests pass" in out
    held, free = (json.loads(seen.body) for seen in upstream.seen)
    patterns = [held_edit.command_schema(body)["pattern"] for body in (held, free)]
    assert "pop\\(0\\)" in patterns[0] and "pop\\(0\\)" not in patterns[1]
    assert patterns[0].rsplit("' ", 1)[1] == patterns[1].rsplit("' ", 1)[1]  # the same file held in both
