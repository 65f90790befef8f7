"""The worker set's shared states (`store.shared_states`): a conversation whose requests land
on different workers is folded once, every worker sends what one worker alone would send, and
whatever goes wrong with the shared file is a miss, never an error."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from chat import stuck_requests
from scenario_loader import acting

import proxy.engine.state.fold as fold_module
from proxy.dialects import CHAT, SpanMemory, plan_offline
from proxy.engine.core import Engine
from proxy.engine.state.cache import StateCache
from proxy.engine.state.conversation import ConversationState
from proxy.store.shared_states import PRUNE_EVERY, STICKY_EVERY, SharedStates

KEY = ("default", "spread")
HEADERS = {"X-Repair-Conversation": "spread"}


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[SharedStates]:
    states = SharedStates(tmp_path / "states.sqlite", max_bytes=64 << 20, ttl_seconds=3600)
    yield states
    states.close()


def workers(count: int, tier: SharedStates | None, *tiers: SharedStates | None) -> list[tuple[Engine, SpanMemory]]:
    """`count` engines as the workers of one set hold them: each its own state cache (on the
    shared tier; worker i on `tiers[i]` when given) and span memory, one policy."""
    policy = acting("stuck_same_diagnostic")  # a conversation the failure model speaks in
    tokens = Engine.of(policy).tokens
    chosen = tiers or (tier,) * count
    return [(Engine(policy, StateCache(1000, 3600, tier=t), tokens), SpanMemory()) for t in chosen]


def sent(order: list[int], set_of: list[tuple[Engine, SpanMemory]]) -> list[bytes]:
    """The bodies a stuck conversation's requests go upstream as, request i served by worker order[i]."""
    out = []
    for body, index in zip(stuck_requests(), order, strict=True):
        engine, memory = set_of[index]
        planned = plan_offline(engine, CHAT, body, HEADERS, memory=memory)
        assert planned is not None
        out.append(planned.body)
    return out


@pytest.fixture
def turns_folded(monkeypatch: pytest.MonkeyPatch) -> Callable[[], int]:
    """How many turns were folded so far (`fold_turn` calls)."""
    calls = [0]
    real = fold_module.fold_turn

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(fold_module, "fold_turn", counting)
    return lambda: calls[0]


def test_alternating_workers_send_what_one_worker_sends(shared: SharedStates) -> None:
    steps = len(stuck_requests())
    alone = sent([0] * steps, workers(1, None))
    spread = sent([i % 2 for i in range(steps)], workers(2, shared))
    assert spread == alone
    assert sum(a != b for a, b in zip(stuck_requests(), alone, strict=True)) >= 2  # instructions were added


def test_a_worker_new_to_a_conversation_folds_only_its_new_turn(
    shared: SharedStates, turns_folded: Callable[[], int]
) -> None:
    """Request i of the conversation holds i+1 turns; with the shared file, each of the two
    workers folds one turn per request, as one worker would."""
    steps = len(stuck_requests())
    sent([i % 2 for i in range(steps)], workers(2, shared))
    assert turns_folded() == steps


def test_not_without_the_shared_file_each_worker_folds_what_it_has_not_seen(turns_folded: Callable[[], int]) -> None:
    """The must-not side of the one above: with no tier, a worker folds every turn it missed."""
    steps = len(stuck_requests())
    sent([i % 2 for i in range(steps)], workers(2, None))
    assert turns_folded() > steps + steps // 2


def test_a_worker_further_on_in_the_shared_file_is_taken_over_what_a_worker_holds(
    shared: SharedStates, turns_folded: Callable[[], int]
) -> None:
    """Worker 0 served the first request; worker 1 the next three; worker 0 then takes worker
    1's state, further on than its own, and folds only the new turns."""
    steps = len(stuck_requests())
    alone = sent([0] * steps, workers(1, None))
    before = turns_folded()
    assert sent([0, 1, 1, 1, *[0] * (steps - 4)], workers(2, shared)) == alone
    assert turns_folded() - before == steps


def test_a_conversation_one_worker_serves_alone_is_written_every_few_turns(shared: SharedStates) -> None:
    """Most conversations stay on one worker (an agent keeps its connection): their states are
    written every `STICKY_EVERY` turns, not on every request."""
    (engine, memory), *_ = workers(1, shared)
    written = []
    for body in stuck_requests():
        plan_offline(engine, CHAT, body, HEADERS, memory=memory)
        with sqlite3.connect(shared.path) as db:
            written.append(db.execute("SELECT turns FROM states").fetchone()[0])
    assert STICKY_EVERY == 4
    assert written == [1, 1, 1, 1, 5, 5, 5, 5, 9]


def test_a_worker_taking_over_a_conversation_folds_at_most_a_few_turns(
    shared: SharedStates, turns_folded: Callable[[], int]
) -> None:
    """Worker 0 served seven requests alone (the file holds its state at turn 5); worker 1 takes
    the eighth, goes on from that state and folds turns 6 to 8, and sends what one worker would."""
    steps = len(stuck_requests())
    alone = sent([0] * steps, workers(1, None))
    set_of = workers(2, shared)
    bodies = stuck_requests()
    for body in bodies[:7]:
        plan_offline(set_of[0][0], CHAT, body, HEADERS, memory=set_of[0][1])
    before = turns_folded()
    planned = plan_offline(set_of[1][0], CHAT, bodies[7], HEADERS, memory=set_of[1][1])
    assert planned is not None and planned.body == alone[7]
    assert turns_folded() - before == 3


def test_a_worker_behind_folds_on_from_its_own_state(shared: SharedStates) -> None:
    """Worker 1's states never reach the shared file (as when its writes fail): worker 0 goes
    on from its own older state over the turns it missed, and the bodies do not change."""
    steps = len(stuck_requests())
    alone = sent([0] * steps, workers(1, None))
    assert sent([0, 1, 1, 1, *[0] * (steps - 4)], workers(2, None, shared, None)) == alone


def test_a_damaged_row_is_a_miss_and_the_state_is_folded_again(shared: SharedStates) -> None:
    steps = len(stuck_requests())
    alone = sent([0] * steps, workers(1, None))
    set_of = workers(2, shared)
    bodies = stuck_requests()
    first = plan_offline(set_of[0][0], CHAT, bodies[0], HEADERS, memory=set_of[0][1])
    assert first is not None
    with sqlite3.connect(shared.path) as db:
        db.execute("UPDATE states SET body = ?", (b"not a pickle",))
    assert shared.load(KEY) is None
    later = [plan_offline(set_of[1][0], CHAT, body, HEADERS, memory=set_of[1][1]) for body in bodies[1:]]
    assert [first.body, *(p.body for p in later if p is not None)] == alone


def test_a_row_that_is_no_state_is_a_miss(shared: SharedStates) -> None:
    import pickle

    with sqlite3.connect(shared.path) as db:
        db.execute("INSERT INTO states VALUES (?, ?, ?, ?, ?)", (*KEY, 3, pickle.dumps({"turns": 3}), 1e12))
    assert shared.load(KEY) is None


def test_a_state_other_code_packed_is_a_miss(shared: SharedStates, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row written before a deploy (or by a worker not yet upgraded) unpickles without an error
    and may still be wrong for this code (a trip's pattern once a name, now the detector): not
    read, the conversation folded again. Must still read: a row this code packed."""
    import pickle

    from proxy.engine.state import codec

    shared.store(KEY, ConversationState(turns=4))
    assert shared.load(KEY) == ConversationState(turns=4)
    with sqlite3.connect(shared.path) as db:  # as the code before the mark packed it: a good pickle
        db.execute("UPDATE states SET body = ?", (pickle.dumps(ConversationState(turns=4)),))
    assert shared.load(KEY) is None
    shared.store(KEY, ConversationState(turns=5))
    monkeypatch.setattr(codec, "MARK", bytes(len(codec.MARK)))  # this code changed since it packed
    assert shared.load(KEY) is None


def test_an_expired_row_is_a_miss(tmp_path: Path) -> None:
    states = SharedStates(tmp_path / "s.sqlite", max_bytes=1 << 20, ttl_seconds=3600)
    states.store(KEY, ConversationState(turns=4))
    assert states.load(KEY) == ConversationState(turns=4)
    with sqlite3.connect(states.path) as db:
        db.execute("UPDATE states SET stored = stored - 7200")
    assert states.load(KEY) is None


def test_the_file_keeps_to_its_byte_bound_oldest_first(tmp_path: Path) -> None:
    state = ConversationState(turns=7, folded=tuple(f"call_{n:04d}" for n in range(200)))
    states = SharedStates(tmp_path / "s.sqlite", max_bytes=100 * 2200, ttl_seconds=3600)
    for n in range(4 * PRUNE_EVERY):
        states.store(("default", f"c{n}"), state)
    assert states.bytes() <= 100 * 2200 + PRUNE_EVERY * 2200
    assert states.load(("default", f"c{4 * PRUNE_EVERY - 1}")) == state
    assert states.load(("default", "c0")) is None


def test_a_reset_takes_the_state_out_of_the_shared_file_too(shared: SharedStates) -> None:
    (engine, memory), (other, _memory) = workers(2, shared)
    plan_offline(engine, CHAT, stuck_requests()[2], HEADERS, memory=memory)
    assert other.cache.get(KEY) is not None  # loaded from the shared file
    assert engine.cache.pop(KEY) is not None
    assert shared.load(KEY) is None


def test_an_unwritable_file_is_a_miss_not_an_error(tmp_path: Path) -> None:
    states = SharedStates(tmp_path / "s.sqlite", max_bytes=1 << 20, ttl_seconds=3600)
    states.close()
    states.store(KEY, ConversationState(turns=1))  # closed: nothing is stored, nothing raised
    assert states.load(KEY) is None


def test_a_sibling_setting_up_the_file_is_waited_for(tmp_path: Path) -> None:
    """Workers start at once: one that finds the new file locked by a sibling setting it up
    waits for it (before, it failed after 20 ms and the worker did not start), then shares it."""
    path = tmp_path / "states.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)  # a sibling, mid-setup: no WAL yet
    holder.execute("BEGIN EXCLUSIVE")
    opened: list[SharedStates] = []
    starting = threading.Thread(target=lambda: opened.append(SharedStates(path, 1 << 20, 3600)))
    starting.start()
    time.sleep(0.3)
    holder.execute("COMMIT")
    holder.close()
    starting.join(timeout=15)
    other = SharedStates(path, max_bytes=1 << 20, ttl_seconds=3600)
    other.store(KEY, ConversationState(turns=2))
    assert opened and opened[0].load(KEY) == ConversationState(turns=2)


def test_a_file_that_cannot_be_opened_leaves_the_worker_its_own_states(tmp_path: Path) -> None:
    states = SharedStates(tmp_path, max_bytes=1 << 20, ttl_seconds=3600)  # a directory: no file there
    states.store(KEY, ConversationState(turns=2))
    assert states.load(KEY) == ConversationState(turns=2)
