"""Properties over generated transcripts, in all four dialects:

- every body is either analysed or marked not analysable; the engine never raises on it;
- nothing to inject: the bytes that go up are the bytes that came;
- a rewrite changes only what it injects: every original message or item is kept, byte for
  byte, in order, and every other member of the body too (Messages: a user message may gain the
  instruction as text blocks, and is otherwise as it was; roles still take turns).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from strategies import as_anthropic, as_ollama, as_responses, chat_body, examples
from support import speaking_policy

from proxy.dialects import ANTHROPIC, CHAT, OLLAMA, RESPONSES, Dialect, plan_offline
from proxy.engine.core import Engine
from proxy.settings.policy import default_policy, load_policy

ENGINE = Engine.of(default_policy())
SPEAKING = Engine.of(load_policy(speaking_policy()))
"""With the failure model's pattern acting: a generated transcript is rewritten now and then
(5 of 300 in Messages, 13 of 300 in chat; none with the defaults, whose patterns are in shadow)."""
FUZZ = settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
DIALECTS: list[tuple[Dialect, str, Any]] = [
    (CHAT, "messages", lambda b: b),
    (RESPONSES, "input", as_responses),
    (OLLAMA, "messages", as_ollama),
]


def _injected(entry: Any) -> bool:
    return isinstance(entry, dict) and "[repair-proxy]" in json.dumps(entry)


@pytest.mark.parametrize(("dialect", "key", "shape"), DIALECTS, ids=lambda v: getattr(v, "name", None) or str(v))
@FUZZ
@given(body=chat_body())
def test_a_body_is_analysed_or_passed_and_a_rewrite_only_adds(
    dialect: Dialect, key: str, shape: Any, body: dict[str, Any]
) -> None:
    raw = _dumps(shape(body))
    planned = plan_offline(ENGINE, dialect, raw, {})  # raises: the property fails
    if planned is None or planned.decision.edit is None:
        assert planned is None or planned.body is raw
        return
    sent = planned.body
    before, after = _loads(raw), _loads(sent)
    kept = [entry for entry in after[key] if not _injected(entry)]
    assert kept == before[key] or planned.decision.edit.tools is not None
    for name in before:
        if name not in (key, "tools", "tool_choice"):
            assert after[name] == before[name], name
    for entry in before[key]:  # every original entry, byte for byte
        assert _dumps(entry) in sent


def _without_notes(message: Any) -> Any:
    """A message as it was before instructions went into it (their text blocks taken out)."""
    if not (isinstance(message, dict) and isinstance(message.get("content"), list)):
        return message
    return {**message, "content": [b for b in message["content"] if not _injected(b)]}


def _as_blocks(message: Any) -> Any:
    """A message whose content is a string, as the one text block it is."""
    content = message.get("content") if isinstance(message, dict) else None
    return {**message, "content": [{"type": "text", "text": content}]} if isinstance(content, str) else message


def _take_turns(messages: list[Any]) -> bool:
    roles = [m.get("role") for m in messages if isinstance(m, dict) and m.get("role") != "system"]
    return all(a != b for a, b in itertools.pairwise(roles))


@FUZZ
@given(body=chat_body())
def test_a_messages_rewrite_only_adds_text_blocks(body: dict[str, Any]) -> None:
    """Messages: every original message is kept, byte for byte, or (a user message) gains the
    instruction as text blocks and is otherwise as it was; an instruction is never a system
    message; messages that took turns still do."""
    raw = _dumps(as_anthropic(body))
    planned = plan_offline(SPEAKING, ANTHROPIC, raw, {})  # raises: the property fails
    if planned is None or planned.decision.edit is None:
        assert planned is None or planned.body is raw
        return
    before, after = _loads(raw), _loads(planned.body)
    for name in before:
        if name not in ("messages", "tools", "tool_choice"):
            assert after[name] == before[name], name
    added = [m for m in after["messages"] if _injected(m)]
    assert all(m["role"] == "user" for m in added)
    kept = [_without_notes(m) for m in after["messages"]]
    kept = [m for m in kept if not (isinstance(m, dict) and m.get("content") == [])]
    assert len(kept) == len(before["messages"])
    for now, was in zip(kept, before["messages"], strict=True):
        assert now == was or (now["role"] == "user" and now == _as_blocks(was))
    for message in after["messages"]:
        if not _injected(message):  # kept byte for byte
            assert _dumps(message) in planned.body
    assert _take_turns(after["messages"]) or not _take_turns(before["messages"])


def _dumps(value: Any) -> bytes:
    """Compact JSON, integers beyond 64 bits exact (the standard library keeps them)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _loads(raw: bytes) -> Any:
    return json.loads(raw)
