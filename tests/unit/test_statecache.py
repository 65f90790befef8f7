"""The state cache's byte bound holds because `approx_bytes` is close to what a cached state
really holds: measured here with tracemalloc on long stuck conversations."""

from __future__ import annotations

import gc

import pytest
from chat import Chat, edit, stuck_requests, test_run, view
from scenario_loader import engine
from support import held_memory

from proxy.dialects import CHAT, plan_offline
from proxy.engine.state.cache import PACKED_OVERHEAD, Codec, StateCache
from proxy.engine.state.codec import pack, unpack
from proxy.engine.state.conversation import ConversationState, approx_bytes

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

    def fold_states() -> list[ConversationState]:
        states = []
        for n in range(HELD):
            planned = plan_offline(eng, CHAT, body, {"X-Repair-Conversation": f"c{n}"})
            assert planned is not None
            states.append(planned.decision.state)
        return states

    states, held = held_memory(fold_states)
    estimate = sum(approx_bytes(s) for s in states)
    assert 0.75 <= held / estimate <= 1.25, f"held {held // HELD} B per state, estimated {estimate // HELD} B"


def states(count: int, turns: int = 30) -> list[ConversationState]:
    """`count` distinct states of stuck conversations (each its own objects, as each
    conversation's state is)."""
    body = conversation(turns)
    eng = engine()
    out = []
    for n in range(count):
        planned = plan_offline(eng, CHAT, body, {"X-Repair-Conversation": f"s{n}"})
        assert planned is not None
        out.append(planned.decision.state)
    return out


def packing(live: int | None, entries: int = 10_000) -> StateCache[ConversationState]:
    return StateCache(entries, 3600, sizer=approx_bytes, codec=Codec(pack, unpack), live=live)


def test_past_the_live_bound_states_are_packed_and_come_back_equal() -> None:
    made = states(5)
    cache = packing(live=2)
    for n, state in enumerate(made):
        cache.put(("t", f"c{n}"), state)
    assert cache.packed == 3
    assert cache.get(("t", "c0")) == made[0]  # unpacked: live again, the oldest live one packed
    assert cache.packed == 3
    assert dict(cache.items()) == {("t", f"c{n}"): s for n, s in enumerate(made)}


def test_what_the_cache_holds_for_packed_entries_is_within_its_estimate() -> None:
    """The byte bound holds for packed entries too: each one's estimate (its length and
    `PACKED_OVERHEAD`) covers what the cache really holds for it, key included (tracemalloc)."""
    made = states(1)[0]
    count = 500

    def fill() -> StateCache[ConversationState]:
        cache = packing(live=1)
        for n in range(count):
            cache.put(("default", f"{n:08d}-4c1e-9a7d-2f3e5b6c7d8e"), unpack(pack(made)))
        return cache

    cache, held = held_memory(fill)
    assert cache.packed == count - 1
    assert held <= cache.bytes, f"held {held // count} B per entry, estimated {cache.bytes // count} B"
    assert held >= 0.9 * cache.bytes  # and not far above it: more would hold fewer than fit


def test_a_packed_entry_counts_its_length_toward_the_byte_bound() -> None:
    made = states(4)
    cache = packing(live=1)
    for n, state in enumerate(made):
        cache.put(("t", f"c{n}"), state)
    expected = approx_bytes(made[3]) + sum(len(pack(s)) + PACKED_OVERHEAD for s in made[:3])
    assert cache.bytes == expected
    assert all(len(pack(s)) < approx_bytes(s) / 3 for s in made)  # what packing saves (30 turns: 9 KB, 30 KB live)


def test_live_states_take_at_most_a_quarter_of_the_byte_bound() -> None:
    made = states(10)
    bound = sum(approx_bytes(s) for s in made)  # all ten live would take all of it
    cache = StateCache(100, 3600, max_bytes=bound, sizer=approx_bytes, codec=Codec(pack, unpack), live=100)
    for n, state in enumerate(made):
        cache.put(("t", f"c{n}"), state)
    assert len(cache) == 10
    assert 7 <= cache.packed <= 8  # two or three of them live, by bytes
    assert cache.get(("t", "c0")) == made[0]  # the oldest came back from packing
    assert cache.bytes <= bound


def test_not_under_a_roomy_byte_bound_every_state_up_to_the_count_stays_live() -> None:
    made = states(10)
    cache = StateCache(100, 3600, max_bytes=100 << 20, sizer=approx_bytes, codec=Codec(pack, unpack), live=100)
    for n, state in enumerate(made):
        cache.put(("t", f"c{n}"), state)
    assert cache.packed == 0


def test_a_smaller_bound_packs_and_then_drops_the_least_recently_used() -> None:
    made = states(10)
    roomy = 100 << 20
    cache = StateCache(100, 3600, max_bytes=roomy, sizer=approx_bytes, codec=Codec(pack, unpack), live=100)
    for n, state in enumerate(made):
        cache.put(("t", f"c{n}"), state)
    assert cache.packed == 0
    packed_sizes = [len(pack(s)) + PACKED_OVERHEAD for s in made]
    smaller = approx_bytes(made[9]) + sum(packed_sizes[5:9])  # the newest live, four more packed
    cache.resize(smaller)
    assert cache.max_bytes == smaller
    assert cache.bytes <= smaller
    assert [key for key, _state in cache.items()] == [("t", f"c{n}") for n in (9, 8, 7, 6, 5)]
    assert cache.packed == 4  # all but the most recently used, past the live share
    cache.resize(roomy)  # a larger bound brings nothing back, and drops nothing more
    assert len(cache) == 5
    assert cache.get(("t", "c5")) == made[5]


def test_a_packed_entry_that_does_not_unpack_is_a_miss() -> None:
    def broken(_data: bytes) -> ConversationState:
        raise ValueError("damaged")

    made = states(2)
    cache: StateCache[ConversationState] = StateCache(100, 3600, codec=Codec(pack, broken), live=1)
    cache.put(("t", "a"), made[0])
    cache.put(("t", "b"), made[1])  # "a" is packed
    assert cache.get(("t", "a")) is None
    assert len(cache) == 1


def tracked_growth(live: int | None) -> int:
    """Objects the garbage collector tracks, added by 200 conversations' states held in a cache."""
    states(1)  # first-use allocations
    gc.collect()
    before = len(gc.get_objects())
    made = states(200)
    cache = packing(live=live)
    for n, state in enumerate(made):
        cache.put(("t", f"c{n}"), state)
    del made, state
    gc.collect()
    grown = len(gc.get_objects()) - before
    assert len(cache) == 200
    return grown


def test_packed_states_are_not_walked_by_the_garbage_collector() -> None:
    """With 8 kept live, 200 cached states add under a tenth of the tracked objects that 200
    live ones keep."""
    assert tracked_growth(live=8) < tracked_growth(live=None) / 10


def test_not_without_packing_every_cached_state_is_walked() -> None:
    """The must-not side: all live, the cached states are what the collector walks (tens of
    objects each)."""
    assert tracked_growth(live=None) > 200 * 20


def test_a_live_states_timeline_leaves_the_collectors_sight() -> None:
    """One row per turn, none of them walked by later collections (a 100-turn state tracked
    155 objects when its rows were objects; it tracks about 50)."""
    (state,) = states(1, turns=100)
    for _ in range(3):  # a tuple leaves once what it holds has left: rows hold tuples, three levels
        gc.collect()
    assert len(state.timeline) == 100
    assert not any(gc.is_tracked(row) for row in state.timeline)
    assert not gc.is_tracked(state.timeline)
    assert [e.turn for e in state.entries()] == list(range(1, 101))


def test_decisions_are_the_same_when_every_state_comes_back_from_packing() -> None:
    """Three stuck conversations interleaved through an engine keeping one state live (each
    request finds its state packed): the bodies sent are those of an engine keeping all live."""
    requests = [stuck_requests(prefix) for prefix in ("a", "b", "c")]
    plain, packed = engine(), engine()
    packed.cache = packing(live=1)
    for step in range(len(requests[0])):
        for prefix, bodies in zip("abc", requests, strict=True):
            headers = {"X-Repair-Conversation": prefix}
            one = plan_offline(plain, CHAT, bodies[step], headers)
            two = plan_offline(packed, CHAT, bodies[step], headers)
            assert one is not None and two is not None and one.body == two.body
    assert packed.cache.packed == 2


def test_a_look_leaves_recency_and_packing_as_they_are() -> None:
    """Admin views peek: the state comes back, still packed, and it is still the first to go."""
    made = states(3)
    cache = packing(live=1, entries=2)  # the least recently used goes when a third comes
    cache.put(("t", "a"), made[0])
    cache.put(("t", "b"), made[1])  # "a" packed
    assert cache.peek(("t", "a")) == made[0]
    assert cache.packed == 1
    cache.put(("t", "c"), made[2])
    assert cache.peek(("t", "a")) is None and cache.peek(("t", "b")) == made[1]


def test_a_listing_shows_one_teams_newest_first_up_to_its_limit() -> None:
    made = states(4)
    cache = packing(live=1)
    for n, (team, state) in enumerate(zip(["t1", "t2", "t1", "t1"], made, strict=True)):
        cache.put((team, f"c{n}"), state)
    assert [key for key, _ in cache.items(first="t1", newest=2)] == [("t1", "c3"), ("t1", "c2")]
    assert [key for key, _ in cache.items(first="t2")] == [("t2", "c1")]
    assert cache.packed == 3  # listing unpacks for the caller only
