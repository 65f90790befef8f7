"""What an edit changes in a body, member by member: the plan a splice carries out.

An edited array is a list of items, each a stretch of the original elements kept byte for byte
(`Kept`) or a new element (`Fresh`); any other member is replaced (`Value`) or taken out
(`REMOVED`). `kept_or_fresh` finds the stretches from the new array's values; `materialise`
turns a plan back into values, for a body written whole rather than spliced.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import compress, count
from operator import is_, not_
from typing import Any

__all__ = [
    "REMOVED",
    "Array",
    "Change",
    "Fresh",
    "Kept",
    "Removed",
    "Value",
    "applied",
    "kept_or_fresh",
    "materialise",
]


@dataclass(frozen=True, slots=True)
class Kept:
    """The original array's elements from `index` on, `count` of them, byte for byte."""

    index: int
    count: int = 1


@dataclass(frozen=True, slots=True)
class Fresh:
    """A new element, serialised."""

    value: Any


@dataclass(frozen=True, slots=True)
class Array:
    """A member's new array, built from original and new elements, in order."""

    items: Sequence[Kept | Fresh]


@dataclass(frozen=True, slots=True)
class Value:
    """A member's new value (added at the end of the object when the body has none)."""

    value: Any


class Removed:
    """The member is taken out."""


def kept_or_fresh(originals: Sequence[Any], values: Sequence[Any]) -> list[Kept | Fresh]:
    """The items of a new array whose `values` are original elements (the same objects as in
    `originals`) and new ones: each stretch of original elements that follow each other in
    both is one `Kept`, so an array of hundreds of messages with a few inserted is a few items.
    (Each stretch's extent is found at C speed from where it starts: the Python loop runs once
    per item, not once per element. Where no element is there twice, the original after the last
    stretch is tried first, and only an original out of that order is looked up in a map of them
    all: an array with elements inserted, as a rewrite makes it, needs none.)"""
    known = set(map(id, originals))
    ordered = len(known) == len(originals)  # an object there twice: the map's choice, its last place
    where: dict[int, int] | None = None
    items: list[Kept | Fresh] = []
    at, total, following = 0, len(values), 0
    while at < total:
        value = values[at]
        if ordered and following < len(originals) and originals[following] is value:
            index = following
        elif id(value) not in known:
            items.append(Fresh(value))
            at += 1
            continue
        else:
            where = where if where is not None else dict(zip(map(id, originals), count()))
            index = where[id(value)]
        length = _stretch(originals, index, values, at)
        items.append(Kept(index, length))
        at += length
        following = index + length
    return items


def _stretch(originals: Sequence[Any], index: int, values: Sequence[Any], at: int) -> int:
    """How many elements from `values[at]` on are the originals from `index` on (at least one)."""
    same = map(is_, _from(originals, index), _from(values, at))
    return next(compress(count(), map(not_, same)), min(len(originals) - index, len(values) - at))


def _from(items: Sequence[Any], start: int) -> Iterator[Any]:
    """`items[start:]`, one at a time, neither copied nor stepped through from the start: a list's
    own iterator set at `start` (as unpickling sets it), any other sequence by index."""
    if type(items) is list:
        iterator = iter(items)
        iterator.__setstate__(start)  # type: ignore[attr-defined]
        return iterator
    return map(items.__getitem__, range(start, len(items)))


def materialise(source: Sequence[Any], items: Sequence[Kept | Fresh]) -> list[Any]:
    """The new array as values (for a body written whole rather than spliced)."""
    out: list[Any] = []
    for item in items:
        if isinstance(item, Kept):
            out.extend(source[item.index : item.index + item.count])
        else:
            out.append(item.value)
    return out


REMOVED = Removed()
Change = Array | Value | Removed


def applied(data: dict[str, Any], changes: dict[str, Change]) -> dict[str, Any]:
    """The body with `changes` made, as values (for a body written whole rather than spliced)."""
    out = dict(data)
    for name, change in changes.items():
        if isinstance(change, Removed):
            out.pop(name, None)
        elif isinstance(change, Value):
            out[name] = change.value
        else:
            found = data.get(name)
            out[name] = materialise(found if isinstance(found, list) else [], change.items)
    return out
