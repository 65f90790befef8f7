"""A planned request knows whether its edit asks for a call schema without writing the body again."""

from __future__ import annotations

from dataclasses import replace

import orjson

from proxy.dialects import CHAT, plan_offline
from proxy.engine.core import Engine
from proxy.engine.text.exchange import Edit
from proxy.settings.policy import default_policy


def test_a_request_is_constrained_exactly_when_it_has_a_body_to_send_unconstrained() -> None:
    body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "fix the test"}]})
    planned = plan_offline(Engine.of(default_policy()), CHAT, body, {"X-Repair-Conversation": "c"})
    assert planned is not None
    edits = [None, Edit(tool_choice="bash"), Edit(tool_choice="bash", call_schema={"type": "object"})]
    for edit in edits:
        changed = replace(planned, decision=replace(planned.decision, edit=edit))
        assert changed.constrained == (changed.unconstrained() is not None)
    assert [replace(planned, decision=replace(planned.decision, edit=e)).constrained for e in edits] == [
        False,
        False,
        True,
    ]
