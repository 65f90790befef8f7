"""The state cache's byte bound holds because `approx_bytes` is close to what a cached state
really holds: measured here with tracemalloc on long stuck conversations."""

from __future__ import annotations

import gc
import tracemalloc

import pytest
from chat import Chat, edit, test_run, view
from scenario_loader import engine

from proxy.dialects import CHAT, plan_offline
from proxy.engine.state import ConversationState, approx_bytes

HELD = 20
"""Conversations whose states are held at once (enough to drown one-off allocations)."""


def conversation(turns: int) -> bytes:
    """A run cycling a failing test, a read and an edit, the failure alternating between two."""
    chat = Chat()
    for i in range(turns):
        if i % 3 == 0:
            chat.turn(test_run("@pytest_addition_a" if (i // 3) % 2 else "@pytest_addition_b"))
        elif i % 3 == 1:
            chat.turn(view(f"/workspace/src/mod{i}.py"))
        else:
            chat.turn(edit(f"/workspace/src/mod{i}.py"))
    return chat.bytes()


@pytest.mark.parametrize("turns", [100, 300])
def test_the_size_estimate_is_within_a_quarter_of_what_a_state_holds(turns: int) -> None:
    body = conversation(turns)
    eng = engine()
    plan_offline(eng, CHAT, body, {"X-Repair-Conversation": "warm-up"})  # first-use allocations
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        states: list[ConversationState] = []
        for n in range(HELD):
            planned = plan_offline(eng, CHAT, body, {"X-Repair-Conversation": f"c{n}"})
            assert planned is not None
            states.append(planned.decision.state)
            del planned
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    estimate = sum(approx_bytes(s) for s in states)
    assert 0.75 <= held / estimate <= 1.25, f"held {held // HELD} B per state, estimated {estimate // HELD} B"
