"""Properties over generated transcripts, in all three dialects:

- every body is either analysed or marked not analysable; the engine never raises on it;
- nothing to inject: the bytes that go up are the bytes that came;
- a rewrite changes only what it injects: every original message or item is kept, byte for
  byte, in order, and every other member of the body too.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from strategies import as_ollama, as_responses, chat_body, examples

from proxy.dialects import CHAT, OLLAMA, RESPONSES, Dialect, plan_offline
from proxy.engine.core import Engine
from proxy.settings.policy import default_policy

ENGINE = Engine.of(default_policy())
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


def _dumps(value: Any) -> bytes:
    """Compact JSON, integers beyond 64 bits exact (the standard library keeps them)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _loads(raw: bytes) -> Any:
    return json.loads(raw)
