"""A folded call's key numbers its identity by how many keys before it carry the same identity
(`history.numbered`): each identity asked about is searched for in the keys, not every key counted,
and the numbers are what counting every key's identity (its part before the last `#`) gives."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from proxy.engine.state.history import numbered

PARTS = st.text(alphabet="ab#1:", max_size=6)


def _counted_whole(before: list[str], identities: list[str]) -> list[str]:
    counts = Counter(key.rpartition("#")[0] for key in before)
    out = []
    for identity in identities:
        out.append(f"{identity}#{counts[identity]}")
        counts[identity] += 1
    return out


@given(st.lists(PARTS, max_size=12), st.lists(PARTS, max_size=4))
def test_an_identity_is_numbered_as_a_count_of_every_key_would_number_it(
    before: list[str], identities: list[str]
) -> None:
    keys = [*before, *numbered(before, before)]
    assert numbered(keys, identities) == _counted_whole(keys, identities)


def test_a_call_run_a_third_time_is_numbered_two() -> None:
    keys = numbered((), ["c:1", "d:2", "c:1"])
    assert keys == ["c:1#0", "d:2#0", "c:1#1"]
    assert numbered(keys, ["c:1", "c:1#0", ""]) == ["c:1#2", "c:1#0#0", "#0"]
