"""The engine end to end in-process: identity, fail-open inputs, determinism, remedy budget."""

from __future__ import annotations

import orjson
import pytest
from chat import Chat, edit, test_run, view
from scenario_loader import acting, analyse, engine

from proxy.engine.state.cache import StateCache
from proxy.engine.text.identity import conversation_id, task_id
from proxy.settings.policy import policy_from_mapping


def test_two_runs_of_one_task_are_two_conversations() -> None:
    """Same task, different first reply (random call ids): same task id, different conversation."""
    first = Chat(id_prefix="run1").turn(test_run()).messages
    second = Chat(id_prefix="run2").turn(test_run()).messages
    assert task_id(first, {}) == task_id(second, {})
    assert conversation_id(first, {}) != conversation_id(second, {})


@pytest.mark.parametrize("body", [b"not json", b"[1]", b'{"model": "m"}', b'{"messages": {}}'])
def test_non_transcripts_are_not_analysable(body: bytes) -> None:
    """Bodies that are not chat transcripts return None (forwarded untouched)."""
    assert analyse(engine(), body) is None


def test_same_transcript_gives_same_injections_on_any_replica() -> None:
    """Two engines (two replicas, no shared cache) produce byte-identical rewritten requests."""
    chat = (
        Chat().turn(test_run()).turn(edit()).turn(test_run("@pytest_addition_b")).turn(edit("a", "b")).turn(test_run())
    )
    a = analyse(engine(acting("stuck_same_diagnostic")), chat.bytes())
    b = analyse(engine(acting("stuck_same_diagnostic")), chat.bytes())
    assert a is not None and b is not None
    assert a.decision.edit is not None and a.body == b.body


def test_nothing_to_inject_means_original_bytes() -> None:
    """With no injection the body object is the caller's bytes, not a re-serialisation."""
    raw = Chat().turn(test_run()).bytes().replace(b",", b", ")
    planned = analyse(engine(), raw)
    assert planned is not None and planned.body is raw and planned.decision.edit is None


def test_remedy_respects_the_token_budget() -> None:
    """A tiny max_injected_tokens trims the snippet, keeping the instruction."""
    tight = engine(
        policy_from_mapping(
            {"repair": {"max_injected_tokens": 60}, "patterns": {"stuck_same_diagnostic": {"mode": "act"}}}, "test"
        )
    )
    chat = Chat().turn(test_run()).turn(test_run("@pytest_addition_b")).turn(test_run())
    planned = analyse(tight, chat.bytes())
    assert planned is not None
    text = planned.decision.placed[0].text
    assert tight.tokens.count(text) <= 60
    assert "[repair-proxy]" in text


def test_state_cache_is_bounded_and_expires() -> None:
    """LRU eviction past max entries; entries older than the TTL are gone."""
    now = [0.0]
    cache: StateCache[int] = StateCache(2, 10, clock=lambda: now[0])
    cache.put(("t", "a"), 1)
    cache.put(("t", "b"), 2)
    assert cache.get(("t", "a")) == 1
    cache.put(("t", "c"), 3)  # evicts b, the least recently used
    assert cache.get(("t", "b")) is None
    now[0] = 11
    assert cache.get(("t", "a")) is None


def test_force_keeps_the_request_valid() -> None:
    """tool_choice only ever names a tool the request offers."""
    chat = Chat(tools=[{"type": "function", "function": {"name": "execute_bash", "parameters": {"type": "object"}}}])
    eng = engine(acting("stuck_same_diagnostic"))
    planned = [
        analyse(eng, chat.turn(test_run(out)).bytes()) for out in ["@pytest_addition_a", "@pytest_addition_b"] * 3
    ]
    at_force = planned[4]
    assert at_force is not None
    assert [t.action.value for t in at_force.decision.new_trips] == ["force"]
    assert at_force.decision.edit is not None
    assert "tool_choice" not in orjson.loads(
        at_force.body
    )  # no read tool on offer: nudge only, never an invalid choice


def _long_edit_cycle(rounds: int) -> Chat:
    """A round of two long edits of the agent's own file and a run, made again and again exactly."""
    text_a = "value = compute(" + ", ".join(f"argument_{k}" for k in range(60)) + ")\n"
    text_b = text_a.replace("compute", "compute_all")
    chat = Chat()
    for _ in range(rounds):
        chat = chat.turn(edit(text_a, text_b)).turn(edit(text_b, text_a))
    return chat


def test_a_cycle_of_long_edits_keeps_its_instruction_within_the_budget() -> None:
    """The calls quoted are cut to the budget, never the instruction after them (issue 60: the
    cycle's instruction was cut away whole when the quoted calls were long edits)."""
    policy = policy_from_mapping(
        {"repair": {"max_injected_tokens": 80}, "patterns": {"ping_pong": {"mode": "act"}}}, "test"
    )
    tight = engine(policy)
    texts: list[str] = []
    for body in [_long_edit_cycle(n).bytes() for n in range(1, 5)]:
        planned = analyse(tight, body)
        assert planned is not None
        texts = [i.text for i in planned.decision.placed if i.pattern == "ping_pong"]
    assert texts, "the round of two long edits went round four times: ping_pong speaks"
    assert tight.tokens.count(texts[0]) <= 80
    assert texts[0].startswith("[repair-proxy]")
    assert texts[0].rstrip().endswith("Take a different step.")


def test_a_restrict_rung_with_nothing_to_take_away_climbs_to_the_next_rung() -> None:
    """restrict never takes away the agent's only tool: that rung gives way to the next one (here a
    hand-back) instead of saying the same words again."""
    ladder = {"after": 3, "action": "nudge", "escalate": [{"at": 5, "action": "restrict"}, {"at": 7, "action": "halt"}]}
    only_one = [{"type": "function", "function": {"name": "str_replace_editor", "parameters": {"type": "object"}}}]
    eng = engine(policy_from_mapping({"patterns": {"repeat_call": {**ladder, "mode": "act", "confirm": 0}}}, "test"))
    chat = Chat(tools=only_one)
    decisions = []
    for _ in range(5):
        chat = chat.turn(view())
        planned = analyse(eng, chat.bytes())
        assert planned is not None
        decisions.append(planned.decision)
    assert [t.action.value for t in decisions[2].new_trips] == ["nudge"]
    assert [t.action.value for t in decisions[4].new_trips] == ["restrict"]
    assert decisions[4].halt is not None, "the only tool cannot be taken away: the next rung, the hand-back"
    two = [*only_one, {"type": "function", "function": {"name": "execute_bash", "parameters": {"type": "object"}}}]
    eng = engine(policy_from_mapping({"patterns": {"repeat_call": {**ladder, "mode": "act", "confirm": 0}}}, "test"))
    chat = Chat(tools=two)
    for _ in range(5):
        chat = chat.turn(view())
        planned = analyse(eng, chat.bytes())
    assert planned is not None and planned.decision.halt is None
    assert planned.decision.edit is not None and planned.decision.edit.tools == ["execute_bash"]
