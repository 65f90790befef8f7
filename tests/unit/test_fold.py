"""The conversation fold: incremental, idempotent by tool_call_id, robust to compaction."""

from __future__ import annotations

from dataclasses import replace

from chat import Chat, edit, test_run, view

from proxy.engine.plan.rules import Rules
from proxy.engine.state.conversation import ConversationState
from proxy.engine.state.fold import fold_messages
from proxy.settings.policy import default_policy

RULES = Rules.of(default_policy())


def fold(state: ConversationState, messages: list[dict[str, object]]) -> tuple[ConversationState, list[str]]:
    caught = fold_messages(state, messages, RULES)
    return caught.state, [t.pattern for t, _ in caught.trips]


def thrash() -> Chat:
    return (
        Chat().turn(test_run()).turn(edit()).turn(test_run("@pytest_addition_b")).turn(edit("a", "b")).turn(test_run())
    )


def comparable(state: ConversationState) -> tuple[object, ...]:
    return (state.repair, state.turns, state.folded, tuple(state.trips), state.detectors)


def test_incremental_fold_equals_whole_fold() -> None:
    """Folding request by request gives the same state as folding the last request cold."""
    chat = thrash()
    whole, _ = fold(ConversationState(), chat.messages)
    state = ConversationState()
    for end in range(3, len(chat.messages) + 1):
        state, _ = fold(state, chat.messages[:end])
    assert comparable(state) == comparable(whole)


def test_refolding_the_same_request_is_a_no_op() -> None:
    """A retried request folds nothing new and trips nothing again."""
    chat = thrash()
    state, trips = fold(ConversationState(), chat.messages)
    assert trips == ["stuck_same_diagnostic"]
    again, trips_again = fold(state, chat.messages)
    assert trips_again == []
    assert comparable(again) == comparable(state)


def test_compacted_history_keeps_the_state() -> None:
    """When the agent summarises its history away, the state still carries the live failure."""
    chat = Chat().turn(test_run()).turn(test_run("@pytest_addition_b"))
    state, _ = fold(ConversationState(), chat.messages)
    compacted = Chat(user="Summary so far: the addition test fails twice.")
    compacted.calls = 100  # new call ids after compaction
    compacted.turn(test_run())
    state, trips = fold(state, compacted.messages)
    assert state.repair.same_diagnostic_streak == 3
    assert trips == ["stuck_same_diagnostic"]


def test_cursor_mismatch_falls_back_to_ids() -> None:
    """An edited earlier message invalidates the cursor; ids keep folding idempotent."""
    chat = Chat().turn(test_run()).turn(view())
    state, _ = fold(ConversationState(), chat.messages)
    chat.messages[1]["content"] = "changed task text"
    chat.turn(test_run("@pytest_addition_b"))
    state2, _ = fold(state, chat.messages)
    assert state2.turns == 3
    assert state2.repair.same_diagnostic_streak == 2


def test_unanswered_last_turn_is_read_again_when_answered() -> None:
    """A turn sent before its results arrive is folded once they do."""
    chat = Chat().turn(test_run())
    partial = [
        *chat.messages,
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "late",
                    "type": "function",
                    "function": {"name": "execute_bash", "arguments": '{"command": "pytest"}'},
                }
            ],
        },
    ]
    state, _ = fold(ConversationState(), partial)
    assert state.turns == 1
    answered = [*partial, {"role": "tool", "tool_call_id": "late", "content": (chat.messages[-1]["content"])}]
    state, _ = fold(state, answered)
    assert state.turns == 2
    assert state.repair.same_diagnostic_streak == 2


def test_fold_turn_does_not_mutate_its_input() -> None:
    """The fold is pure: the state passed in is unchanged."""
    chat = thrash()
    before = ConversationState()
    snapshot = replace(before)
    fold(before, chat.messages)
    assert comparable(before) == comparable(snapshot)
