"""Writing an edited request back: only what the edit changes is written anew.

A request is re-serialised from a parse, numbers beyond 64 bits become floats, escapes and
spacing change, and a dialect could drop what it does not model. So an edited body is
spliced instead: the members of the top-level object the edit does not touch keep their
bytes; an edited array (`messages`, `input`, `tools`) is rebuilt from its original elements,
each kept byte for byte (`Kept`), and the new ones (`Fresh`); a member is replaced
(`Value`) or taken out (`REMOVED`). Spans come from the standard library's JSON scanner.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["REMOVED", "Array", "Fresh", "Kept", "Removed", "SpliceError", "Value", "loads_piecewise", "splice"]

_DECODER = json.JSONDecoder()
_WS = " \t\n\r"


class SpliceError(ValueError):
    """The body is not a JSON object this splicer can walk (the caller re-serialises instead)."""


@dataclass(frozen=True, slots=True)
class Kept:
    """The original array's element at `index`, byte for byte."""

    index: int


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


REMOVED = Removed()
Change = Array | Value | Removed


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in _WS:
        at += 1
    return at


def _decode(text: str, at: int) -> tuple[Any, int]:
    try:
        value, end = _DECODER.raw_decode(text, at)
    except json.JSONDecodeError as exc:
        raise SpliceError(str(exc)) from None
    return value, int(end)


def _elements(text: str, start: int) -> list[tuple[int, int, Any]]:
    """(start, end, value) of each element of the array at `start`, one element at a time."""
    if text[start] != "[":
        raise SpliceError("not an array")
    at = _skip(text, start + 1)
    found: list[tuple[int, int, Any]] = []
    while at < len(text) and text[at] != "]":
        value, end = _decode(text, at)
        found.append((at, end, value))
        at = _skip(text, end)
        if at < len(text) and text[at] == ",":
            at = _skip(text, at + 1)
    if at >= len(text):
        raise SpliceError("an array is not closed")
    return found


def _member_value(text: str, start: int) -> tuple[Any, int]:
    """A member's value and end: an array element by element, anything else in one step."""
    if text[start] != "[":
        return _decode(text, start)
    elements = _elements(text, start)
    close = _skip(text, elements[-1][1]) if elements else _skip(text, start + 1)
    return [e[2] for e in elements], close + 1


def _members(text: str) -> list[tuple[str, int, int, int, Any]]:
    """(key, member start, value start, value end, value) of each member of the top-level object."""
    at = _skip(text, 0)
    if at >= len(text) or text[at] != "{":
        raise SpliceError("not a JSON object")
    at = _skip(text, at + 1)
    found: list[tuple[str, int, int, int, Any]] = []
    while at < len(text) and text[at] != "}":
        if text[at] != '"':
            raise SpliceError(f"expected a key at {at}")
        key, after = json.decoder.scanstring(text, at + 1)  # type: ignore[attr-defined]
        colon = _skip(text, after)
        if colon >= len(text) or text[colon] != ":":
            raise SpliceError(f"expected ':' at {colon}")
        start = _skip(text, colon + 1)
        value, end = _member_value(text, start)
        found.append((key, at, start, end, value))
        at = _skip(text, end)
        if at < len(text) and text[at] == ",":
            at = _skip(text, at + 1)
    return found


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def _array(text: str, start: int, change: Array) -> str:
    spans = _elements(text, start) if text[start] == "[" else []
    parts = []
    for item in change.items:
        if isinstance(item, Kept):
            begin, end, _value = spans[item.index]
            parts.append(text[begin:end])
        else:
            parts.append(_dumps(item.value))
    return "[" + ",".join(parts) + "]"


def splice(body: bytes, changes: Mapping[str, Change]) -> bytes:
    """`body` with `changes` made, every byte they do not touch kept."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpliceError(str(exc)) from None
    members = _members(text)
    keys = [m[0] for m in members]
    if any(keys.count(k) > 1 for k in changes):
        raise SpliceError("a changed key appears more than once")
    out: list[str] = []
    cursor = 0
    for key, member_start, value_start, value_end, _value in members:
        change = changes.get(key)
        if change is None:
            continue
        if isinstance(change, Removed):
            out.append(text[cursor:member_start].rstrip(_WS).removesuffix(","))
            cursor = value_end
            continue
        new = _array(text, value_start, change) if isinstance(change, Array) else _dumps(change.value)
        out.append(text[cursor:value_start] + new)
        cursor = value_end
    tail = text[cursor:]
    added = [f'"{k}":{_dumps(c.value)}' for k, c in changes.items() if isinstance(c, Value) and k not in keys]
    if added:
        close = tail.rstrip(_WS)
        if not close.endswith("}"):
            raise SpliceError("the object does not end with '}'")
        inner = close[:-1]
        joiner = "," if inner.strip(_WS + "{") else ""
        tail = inner + joiner + ",".join(added) + "}" + tail[len(close) :]
    spliced = "".join(out) + tail
    if spliced.lstrip(_WS).startswith("{,"):
        spliced = spliced.replace("{,", "{", 1)
    return spliced.encode("utf-8")


def loads_piecewise(body: bytes) -> dict[str, Any]:
    """A large JSON object parsed one member, and one array element, at a time.

    The same result as a parse in one call, but each step is short: run in a worker thread,
    it lets the event loop in between steps (a single-call parse of a body of many MB holds
    the interpreter for its whole length). `SpliceError` when it is not a JSON object."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpliceError(str(exc)) from None
    return {member[0]: member[4] for member in _members(text)}
