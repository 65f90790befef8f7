"""The conversation fold: incremental, idempotent by tool_call_id, robust to compaction."""

from __future__ import annotations

from dataclasses import replace

from chat import Chat, bash, edit, test_run, view

from proxy.engine.plan.rules import Rules
from proxy.engine.state.conversation import ConversationState
from proxy.engine.state.fold import fold_messages
from proxy.settings.policy import default_policy

RULES = Rules.of(default_policy())


def fold(state: ConversationState, messages: list[dict[str, object]]) -> tuple[ConversationState, list[str]]:
    caught = fold_messages(state, messages, RULES)
    return caught.state, [t.pattern.name for t, _ in caught.trips]


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


def _numbered_from_zero(chat: Chat) -> Chat:
    """The transcript as a server that numbers call ids from 0 in every reply would leave it."""
    for message in chat.messages:
        for call in message.get("tool_calls") or []:  # type: ignore[attr-defined]
            call["id"] = "call_0"
        if message.get("role") == "tool":
            message["tool_call_id"] = "call_0"
    return chat


def test_another_run_of_the_same_task_gets_a_state_of_its_own() -> None:
    """Run A fails the same check three times (stuck); run B of the same task starts the same,
    edits and fails once more: under ids a server numbers from 0, B is a branch of its own and
    is told nothing of A's streak (the old fold resumed B on A's state: 'came back 3 times')."""
    run_a = _numbered_from_zero(Chat().turn(test_run()).turn(test_run("@pytest_addition_b")).turn(test_run()))
    state, trips_a = fold(ConversationState(), run_a.messages)
    assert trips_a == ["stuck_same_diagnostic"]
    run_b = _numbered_from_zero(Chat().turn(test_run()).turn(edit()).turn(test_run("@pytest_addition_b")))
    branch, trips_b = fold(state, run_b.messages)
    assert trips_b == []
    assert branch.repair.same_diagnostic_streak == 2
    assert branch.turns == 3


def test_a_server_that_reuses_one_call_id_leaves_repair_on() -> None:
    """Every call `call_0`, request after request: each new result is folded (the old fold
    skipped them all as seen), and the third same failure trips."""
    chat = Chat()
    state = ConversationState()
    tripped: list[str] = []
    for output in ("@pytest_addition_a", "@pytest_addition_b", "@pytest_addition_a"):
        chat.turn(test_run(output))
        state, trips = fold(state, _numbered_from_zero(chat).messages)
        tripped += trips
    assert tripped == ["stuck_same_diagnostic"]
    assert state.turns == 3


def test_a_request_that_shares_only_older_turns_is_another_branch() -> None:
    """A history that keeps the first turns but replaces the newest folded one (another attempt
    from an earlier point) is folded from its start, not on top of the state."""
    chat = Chat().turn(test_run()).turn(view()).turn(test_run("@pytest_addition_b"))
    state, _ = fold(ConversationState(), chat.messages)
    retried = Chat().turn(test_run()).turn(view())
    retried.turn(test_run())
    branch, _ = fold(state, retried.messages)
    assert branch.turns == 3
    assert branch.repair.same_diagnostic_streak == 2


INSTALLED = "<returncode>0</returncode>\n<output>\n</output>"


def test_installing_the_runner_leaves_the_failure_live() -> None:
    """`pip install pytest -q` exits 0 and runs no test (corpus: mini-swe-agent runs install the
    runner mid-task; read as a check by the word `pytest`, its exit code cleared the failure)."""
    state, _ = fold(
        ConversationState(), Chat().turn(test_run()).turn(bash("pip install pytest -q", INSTALLED)).messages
    )
    assert state.repair.live and state.repair.same_diagnostic_streak == 1


def test_a_passing_run_of_the_check_clears_it() -> None:
    """The same exit code from the check itself does."""
    ran = bash("python -m pytest tests/test_parse.py", INSTALLED)
    state, _ = fold(ConversationState(), Chat().turn(test_run()).turn(ran).messages)
    assert not state.repair.live
