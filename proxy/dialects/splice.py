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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from proxy.dialects.changes import Array, Change, Kept, Removed, Value
from proxy.dialects.spans import Known, SpanMemory, Walk, running_hash

__all__ = ["SpliceError", "loads_piecewise", "splice"]

_DECODER = json.JSONDecoder()
_WS = " \t\n\r"
_WS_BYTES = _WS.encode()


class SpliceError(ValueError):
    """The body is not a JSON object this splicer can walk (the caller re-serialises instead)."""


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


def _elements(text: str, start: int, known: Known | None = None, raw: bytes | None = None) -> Walk:
    """(start, end, value) of each element of the array at `start`, one element at a time; the
    ones `known` from the conversation's last body (their text unchanged) are not parsed again
    (their value is None). `raw`: the text's bytes, when their offsets are the text's (ASCII)."""
    if text[start] != "[":
        raise SpliceError("not an array")
    at = _skip(text, start + 1)
    found: list[tuple[int, int, Any]] = []
    walk = Walk(found, start, None)
    if known is not None and known.value_start == start and known.spans and known.end <= len(text):
        hasher = running_hash(text, start, known.end, raw)
        if hasher.digest() == known.digest:
            found.extend(known.spans)
            walk.hashed_to, walk.hasher, walk.reused = known.end, hasher, known.spans
            at = _skip(text, known.end)
            if at < len(text) and text[at] == ",":
                at = _skip(text, at + 1)
    while at < len(text) and text[at] != "]":
        value, end = _decode(text, at)
        found.append((at, end, value))
        at = _skip(text, end)
        if at < len(text) and text[at] == ",":
            at = _skip(text, at + 1)
    if at >= len(text):
        raise SpliceError("an array is not closed")
    return walk


@dataclass(frozen=True, slots=True)
class _Member:
    key: str
    start: int
    value_start: int
    value_end: int
    scalar: Any
    """The value of a member that is not an array."""
    walk: Walk | None
    """For an array, its elements as found."""

    @property
    def value(self) -> Any:
        """The member's value (an array's listed from its elements only when asked: a splice
        never asks, and a known element's value is not there to list)."""
        return self.scalar if self.walk is None else [e[2] for e in self.walk.elements]

    @property
    def elements(self) -> list[tuple[int, int, Any]] | None:
        """For an array, each element's (start, end, value)."""
        return None if self.walk is None else self.walk.elements


def _member_value(
    text: str, start: int, known: Known | None = None, raw: bytes | None = None
) -> tuple[Any, int, Walk | None]:
    """A member's value (None for an array), end and (for an array) elements: an array element by
    element."""
    if text[start] != "[":
        value, end = _decode(text, start)
        return value, end, None
    walk = _elements(text, start, known, raw)
    elements = walk.elements
    close = _skip(text, elements[-1][1]) if elements else _skip(text, start + 1)
    return None, close + 1, walk


def _members(
    text: str,
    until: frozenset[str] | None = None,
    known: Mapping[str, Known] | None = None,
    raw: bytes | None = None,
) -> list[_Member]:
    """The members of the top-level object, in order; with `until`, only as far as the last of
    those keys seen (a splice copies everything after its last change as it is)."""
    at = _skip(text, 0)
    if at >= len(text) or text[at] != "{":
        raise SpliceError("not a JSON object")
    at = _skip(text, at + 1)
    found: list[_Member] = []
    remaining = set(until) if until is not None else None
    while at < len(text) and text[at] != "}":
        if remaining is not None and not remaining:
            break
        if text[at] != '"':
            raise SpliceError(f"expected a key at {at}")
        key, after = json.decoder.scanstring(text, at + 1)  # type: ignore[attr-defined]
        colon = _skip(text, after)
        if colon >= len(text) or text[colon] != ":":
            raise SpliceError(f"expected ':' at {colon}")
        start = _skip(text, colon + 1)
        value, end, walk = _member_value(text, start, (known or {}).get(key), raw)
        found.append(_Member(key, at, start, end, value, walk))
        if remaining is not None:
            remaining.discard(key)
        at = _skip(text, end)
        if at < len(text) and text[at] == ",":
            at = _skip(text, at + 1)
    return found


Piece = bytes | slice
"""A stretch of the result: new bytes, or a stretch of the original text (`slice` of its offsets)."""


def _array(member: _Member, change: Array) -> list[Piece]:
    """The new array, in pieces: original elements that follow each other in both are one
    stretch of the original text, separators included."""
    spans = member.elements or []
    parts: list[Piece] = []
    run_begin = run_end = previous = -1  # the stretch of kept elements being copied
    for item in change.items:
        if isinstance(item, Kept):
            begin = spans[item.index][0]
            end = spans[item.index + item.count - 1][1]
            if item.index == previous + 1 and run_begin >= 0:
                run_end = end
            else:
                if run_begin >= 0:
                    parts.append(slice(run_begin, run_end))
                run_begin, run_end = begin, end
            previous = item.index + item.count - 1
            continue
        if run_begin >= 0:
            parts.append(slice(run_begin, run_end))
            run_begin = previous = -1
        parts.append(orjson.dumps(item.value))
    if run_begin >= 0:
        parts.append(slice(run_begin, run_end))
    pieces: list[Piece] = [b"["]
    for part in parts:
        pieces += (part, b",")
    if parts:
        pieces.pop()  # the comma after the last part
    pieces.append(b"]")
    return pieces


def _stripped_end(text: str, start: int, end: int) -> int:
    """Where `text[start:end]` ends once trailing whitespace is taken off (nothing copied)."""
    while end > start and text[end - 1] in _WS:
        end -= 1
    return end


def _last_char(text: str, pieces: list[Piece]) -> bytes:
    """The last character of `pieces` that is not whitespace (b"": none)."""
    for piece in reversed(pieces):
        if isinstance(piece, slice):
            end = _stripped_end(text, piece.start, piece.stop)
            if end > piece.start:
                return text[end - 1].encode("utf-8")
        elif stripped := piece.rstrip(_WS_BYTES):
            return stripped[-1:]
    return b""


def _joined(text: str, raw: bytes | None, pieces: list[Piece]) -> bytes:
    """The pieces as one body: an ASCII body's stretches copied from its bytes (`raw`), once."""
    if raw is not None:
        view = memoryview(raw)
        return b"".join([view[piece] if isinstance(piece, slice) else piece for piece in pieces])
    return b"".join([text[piece].encode("utf-8") if isinstance(piece, slice) else piece for piece in pieces])


def splice(
    body: bytes,
    changes: Mapping[str, Change],
    memory: SpanMemory | None = None,
    key: tuple[str, str] = ("", ""),
) -> bytes:
    """`body` with `changes` made, every byte they do not touch kept. With a `memory` and the
    conversation's `key`, what the last splice of the conversation found is reused.

    What is kept is written as stretches of the original, copied once as the result is joined
    (an ASCII body's from its bytes, which lie at its text's offsets: neither copied as text nor
    encoded again; it is hashed from its bytes too)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpliceError(str(exc)) from None
    raw = body if text.isascii() else None
    arrays = [k for k, c in changes.items() if isinstance(c, Array)]
    known = memory.recall(key) if memory is not None and len(arrays) == 1 else None
    members = _members(text, frozenset(changes), {arrays[0]: known} if known is not None else None, raw)
    if memory is not None and len(arrays) == 1:
        edited = next((m for m in members if m.key == arrays[0] and m.elements), None)
        if edited is not None and edited.walk is not None and edited.walk.elements:
            spans = edited.walk.spans()
            digest = edited.walk.digest(text, edited.value_start, raw)
            memory.keep(key, Known(edited.value_start, spans[-1][1], digest, spans))
    keys = [m.key for m in members]
    rest = text[members[-1].value_end :] if members else ""
    if any(keys.count(k) > 1 for k in changes) or any(f'"{k}":' in rest for k in changes):
        raise SpliceError("a changed key may appear more than once")  # the caller writes the parse
    out: list[Piece] = []
    cursor = 0
    for member in members:
        change = changes.get(member.key)
        if change is None:
            continue
        if isinstance(change, Removed):
            end = _stripped_end(text, cursor, member.start)
            out.append(slice(cursor, end - 1 if end > cursor and text[end - 1] == "," else end))
            cursor = member.value_end
            continue
        out.append(slice(cursor, member.value_start))
        out.extend(_array(member, change) if isinstance(change, Array) else [orjson.dumps(change.value)])
        cursor = member.value_end
    added = [
        f'"{k}":'.encode() + orjson.dumps(c.value) for k, c in changes.items() if isinstance(c, Value) and k not in keys
    ]
    if added:
        close = _stripped_end(text, cursor, len(text))
        if close == cursor or text[close - 1] != "}":
            raise SpliceError("the object does not end with '}'")
        inner = slice(cursor, close - 1)
        # a member precedes the new ones unless the object is empty so far (what precedes may be
        # a value just written, or the original text: look at both, not at the tail alone)
        joiner = b"" if _last_char(text, [*out, inner]) in (b"{", b",") else b","
        out += (inner, joiner + b",".join(added) + b"}")
        cursor = close
    out.append(slice(cursor, len(text)))
    spliced = _joined(text, raw, out)
    if spliced.lstrip(_WS_BYTES).startswith(b"{,"):
        spliced = spliced.replace(b"{,", b"{", 1)
    return spliced


def loads_piecewise(body: bytes) -> dict[str, Any]:
    """A large JSON object parsed one member, and one array element, at a time.

    The same result as a parse in one call, but each step is short: run in a worker thread,
    it lets the event loop in between steps (a single-call parse of a body of many MB holds
    the interpreter for its whole length). `SpliceError` when it is not a JSON object."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpliceError(str(exc)) from None
    return {member.key: member.value for member in _members(text)}
