"""The splicer: a body with some members changed keeps every other byte, and is always JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from support import held_memory

from proxy.dialects.changes import Array, Fresh, Kept, Removed, Value, kept_or_fresh, materialise
from proxy.dialects.splice import splice

KEYS = ("model", "messages", "tools", "tool_choice", "stream", "seed")


def expected(data: dict[str, Any], changes: dict[str, Value | Removed]) -> dict[str, Any]:
    out = dict(data)
    for key, change in changes.items():
        if isinstance(change, Removed):
            out.pop(key, None)
        else:
            out[key] = change.value
    return out


def test_a_new_member_after_a_changed_last_member_is_separated() -> None:
    """The finish gate's retry replaces `tools` (the body's last member) and adds `tool_choice`:
    the two were written with no comma between them, and llama.cpp answered 400."""
    body = b'{"messages": [], "model": "local", "tools": [{"type": "function"}]}'
    spliced = splice(body, {"tools": Value([]), "tool_choice": Value("required")})
    assert orjson.loads(spliced) == {"messages": [], "model": "local", "tools": [], "tool_choice": "required"}
    assert spliced.startswith(b'{"messages": [], "model": "local", ')


def test_a_new_member_after_a_removed_last_member_is_separated() -> None:
    spliced = splice(b'{"a": 1, "b": 2}', {"b": Removed(), "c": Value(3)})
    assert orjson.loads(spliced) == {"a": 1, "c": 3}


members = st.dictionaries(
    st.sampled_from(KEYS),
    st.one_of(
        st.integers(-(2**63), 2**63 - 1), st.text(max_size=5), st.lists(st.integers(-(2**63), 2**63 - 1), max_size=3)
    ),
    max_size=5,
)
edits = st.dictionaries(
    st.sampled_from(KEYS),
    st.one_of(
        st.builds(Removed),
        st.builds(
            Value,
            st.one_of(
                st.integers(-(2**63), 2**63 - 1),
                st.text(max_size=5),
                st.lists(st.integers(-(2**63), 2**63 - 1), max_size=2),
            ),
        ),
    ),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(members, edits, st.sampled_from([", ", ",", ",\n  "]))
def test_any_mix_of_changes_is_the_same_object_as_a_whole_rewrite(
    data: dict[str, Any], changes: dict[str, Value | Removed], separator: str
) -> None:
    body = ("{" + separator.join(f'"{k}": {orjson.dumps(v).decode()}' for k, v in data.items()) + "}").encode()
    assert orjson.loads(splice(body, changes)) == expected(data, changes)


def test_the_span_memory_keeps_to_its_byte_bound() -> None:
    """Long conversations' remembered spans are bounded in bytes too, least recently used first
    (before, 2,000 conversations of 300 turns grew a worker by 250 MB with a 64 MB cache bound)."""
    from proxy.dialects.spans import Known, SpanMemory, known_bytes

    def known(messages: int) -> Known:
        spans = tuple((i * 10, i * 10 + 9, None) for i in range(messages))
        return Known(0, spans[-1][1], b"d", spans)

    each = known_bytes(known(900))
    memory = SpanMemory(entries=10_000, max_bytes=10 * each)
    for n in range(50):
        memory.keep(("team", f"c{n}"), known(900))
    assert memory.bytes <= 10 * each
    assert memory.recall(("team", "c49")) is not None and memory.recall(("team", "c0")) is None
    memory.keep(("team", "c49"), known(10))  # replacing an entry gives its bytes back
    assert memory.bytes <= 9 * each + known_bytes(known(10))


def test_what_the_span_memory_holds_is_within_its_estimate() -> None:
    """Each remembered span's estimate (`SPAN_BYTES`) covers what it really holds: a tuple of
    two offsets (ints past the small-int cache in a long body) and None (tracemalloc)."""
    from proxy.dialects.spans import Known, SpanMemory

    def remember() -> SpanMemory:
        memory = SpanMemory(entries=1000)
        at = 100_000
        for n in range(20):
            spans = tuple((at + 251 * i, at + 251 * i + 250, None) for i in range(2000))
            at = spans[-1][1] + 1
            memory.keep(("default", f"conversation-{n:06d}"), Known(10, at, b"d" * 16, spans))
        return memory

    memory, held = held_memory(remember)
    assert 0.9 * memory.bytes <= held <= memory.bytes, f"held {held} B, estimated {memory.bytes} B"


def test_elements_kept_in_order_are_copied_with_the_separators_between_them() -> None:
    body = b'{"messages": [ {"a": 1} ,\n  {"b": 2},{"c": 3} , {"d": 4}], "model": "m"}'
    plan = Array([Kept(0), Kept(1), Fresh({"x": 0}), Kept(2), Kept(3), Kept(3), Kept(0)])
    spliced = splice(body, {"messages": plan})
    assert (
        spliced == b'{"messages": [{"a": 1} ,\n  {"b": 2},{"x":0},{"c": 3} , {"d": 4},{"d": 4},{"a": 1}], "model": "m"}'
    )


elements = st.lists(st.dictionaries(st.sampled_from("abc"), st.integers(0, 9), max_size=2), min_size=1, max_size=6)


Plan = tuple[list[dict[str, int]], list[int | dict[str, int]], bytes]


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    """Original elements, a plan of them (an index) and new ones (a dict), and a body holding
    the originals with one of the separators agents' bodies use."""
    originals = draw(elements)
    picks = st.one_of(st.integers(0, len(originals) - 1), st.builds(dict, x=st.integers(0, 9)))
    plan = draw(st.lists(picks, max_size=10))
    separator = draw(st.sampled_from([",", " , ", ",\n    "]))
    body = ('{"messages": [' + separator.join(orjson.dumps(o).decode() for o in originals) + "]}").encode()
    return originals, plan, body


@settings(max_examples=300, deadline=None)
@given(plans())
def test_any_plan_of_kept_and_new_elements_is_the_array_it_names(drawn: Plan) -> None:
    originals, plan, body = drawn
    items = [Kept(p) if isinstance(p, int) else Fresh(p) for p in plan]
    spliced = orjson.loads(splice(body, {"messages": Array(items)}))
    assert spliced == {"messages": [originals[p] if isinstance(p, int) else p for p in plan]}


def test_original_elements_that_follow_each_other_are_one_kept_stretch() -> None:
    originals = [{"n": n} for n in range(600)]
    values = [*originals[:200], {"new": 1}, *originals[200:599], {"new": 2}, {"new": 3}]
    items = kept_or_fresh(originals, values)
    assert items == [Kept(0, 200), Fresh({"new": 1}), Kept(200, 399), Fresh({"new": 2}), Fresh({"new": 3})]
    assert materialise(originals, items) == values


def test_not_merged_when_originals_come_out_of_order_or_an_equal_copy_stands_in() -> None:
    originals = [{"n": n} for n in range(4)]
    copy = dict(originals[2])  # equal, but not the original: written anew
    items = kept_or_fresh(originals, [originals[0], originals[1], copy, originals[3], originals[1]])
    assert items == [Kept(0, 2), Fresh(copy), Kept(3), Kept(1)]


@settings(max_examples=300, deadline=None)
@given(plans())
def test_stretches_found_from_the_new_values_splice_to_the_array_they_name(drawn: Plan) -> None:
    originals, plan, body = drawn
    values = [originals[p] if isinstance(p, int) else p for p in plan]
    items = kept_or_fresh(originals, values)
    assert orjson.loads(splice(body, {"messages": Array(items)})) == {"messages": values}
    assert materialise(originals, items) == values


def _by_map(originals: Sequence[Any], values: Sequence[Any]) -> list[Kept | Fresh]:
    """The reference: every value looked up in a map of the originals (an object there twice maps
    to its last place), each stretch extended one element at a time."""
    where = {id(o): k for k, o in enumerate(originals)}
    items: list[Kept | Fresh] = []
    at = 0
    while at < len(values):
        index = where.get(id(values[at]))
        if index is None:
            items.append(Fresh(values[at]))
            at += 1
            continue
        length = 1
        while (
            index + length < len(originals)
            and at + length < len(values)
            and originals[index + length] is values[at + length]
        ):
            length += 1
        items.append(Kept(index, length))
        at += length
    return items


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.integers(0, 3), st.builds(dict, n=st.integers(0, 9))), max_size=12),
    st.lists(st.one_of(st.integers(0, 11), st.builds(dict, fresh=st.integers(0, 3))), max_size=16),
)
def test_stretches_tried_in_order_first_are_those_a_map_of_every_original_finds(
    originals: list[object], picks: list[object]
) -> None:
    """Originals tried in order first (no map needed for an array with elements inserted) give the
    items a lookup of every value in a map of the originals gives, objects there twice included."""
    values = [originals[p % len(originals)] if isinstance(p, int) and originals else p for p in picks]
    inserted = [x for k, o in enumerate(originals) for x in ([o, {"placed": k}] if k % 3 == 1 else [o])]
    for new in (values, inserted):
        assert kept_or_fresh(originals, new) == _by_map(originals, new)
        assert materialise(originals, kept_or_fresh(originals, new)) == new
