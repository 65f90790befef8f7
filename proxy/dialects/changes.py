"""What an edit changes in a body, member by member: the plan a splice carries out.

An edited array is a list of items, each a stretch of the original elements kept byte for byte
(`Kept`) or a new element (`Fresh`); any other member is replaced (`Value`) or taken out
(`REMOVED`). `kept_or_fresh` finds the stretches from the new array's values; `materialise`
turns a plan back into values, for a body written whole rather than spliced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import count
from typing import Any

__all__ = ["REMOVED", "Array", "Change", "Fresh", "Kept", "Removed", "Value", "kept_or_fresh", "materialise"]


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
    (The lookups run at C speed; only the stretches are walked in Python.)"""
    where = dict(zip(map(id, originals), count()))
    items: list[Kept | Fresh] = []
    start = previous = -1
    for value, index in zip(values, map(where.get, map(id, values)), strict=True):
        if index is not None and start >= 0 and index == previous + 1:
            previous = index
            continue
        if start >= 0:
            items.append(Kept(start, previous - start + 1))
        if index is None:
            items.append(Fresh(value))
            start = previous = -1
        else:
            start = previous = index
    if start >= 0:
        items.append(Kept(start, previous - start + 1))
    return items


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
