"""Where a request body's bytes meet what was read of its conversation's last one (`prefix`): the
whole values after a comma, the members that close a transcript, where two bodies first differ, the
rest of a body parsed alone. Every value is parsed by orjson, as a whole body is; bytes are compared
in place (`bytes.startswith` at an offset: memcmp, no copy)."""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["after_members", "close_of", "common_prefix", "last_byte", "likely_close", "new_elements", "tail"]

WS = b" \t\r\n"


def new_elements(between: bytes) -> list[Any] | None:
    """The values of `between` (nothing, or a comma then whole values), or None."""
    stripped = between.strip(WS)
    if not stripped:
        return []
    try:
        values = orjson.loads(b"[" + stripped[1:] + b"]") if stripped.startswith(b",") else None
    except orjson.JSONDecodeError:
        return None
    return values if isinstance(values, list) else None


def after_members(rest: bytes) -> dict[str, Any] | None:
    """The members `rest` closes the transcript with (`]`, then `, "k": v ... }` or `}`), or None."""
    stripped = rest.strip(WS)
    tail = stripped[1:].lstrip(WS) if stripped.startswith(b"]") else b""
    if tail == b"}":
        return {}
    if not tail.startswith(b","):
        return None
    try:
        members = orjson.loads(b"{" + tail[1:])
    except orjson.JSONDecodeError:
        return None
    return members if isinstance(members, dict) else None


def common_prefix(first: bytes, second: bytes) -> int:
    """How many leading bytes `first` and `second` share (compared in place, halving)."""
    low, high = 0, min(len(first), len(second))
    view = memoryview(first)
    while low < high:
        middle = (low + high + 1) // 2
        if second.startswith(view[low:middle], low):
            low = middle
        else:
            high = middle - 1
    return low


_NUL_KEY = b'"\\u0000"'


def tail(body: bytes, end: int, key: str) -> tuple[list[Any], dict[str, Any]] | None:
    """The elements after `end` and the members after the transcript, parsed from the rest of the body
    alone, as the members of an object whose first member is an array: what a whole parse would give
    of them (None: the rest is no end of a transcript, or names the transcript again)."""
    tail = body[end:].lstrip(WS)
    if _NUL_KEY in tail:
        return None
    if tail.startswith(b","):
        tail = tail[1:]
    elif not tail.startswith(b"]"):
        return None
    try:
        members = orjson.loads(b'{"\\u0000":[' + tail)
    except orjson.JSONDecodeError:
        return None
    new = members.pop("\x00", None) if isinstance(members, dict) else None
    if not isinstance(new, list) or key in members:
        return None
    return new, members


def close_of(body: bytes, end: int, new: list[Any], after: dict[str, Any]) -> int:
    """Where the transcript's `]` is, past `end`, given what follows it (-1: not found)."""
    if not after:
        at = last_byte(body, len(body))
        at = last_byte(body, at) if at >= 0 and body[at] == ord("}") else -1
        return at if at >= end and body[at] == ord("]") else -1
    needle = orjson.dumps(next(iter(after)))  # the first member after it, as JSON writes its key
    at = body.find(needle, end)
    while at >= 0:
        comma = last_byte(body, at)
        close = last_byte(body, comma) if comma >= 0 and body[comma] == ord(",") else -1
        if close >= end and body[close] == ord("]") and new_elements(body[end:close]) == new:
            return close
        at = body.find(needle, at + 1)
    return -1


def likely_close(body: bytes, after: dict[str, Any]) -> int:
    """Where a body's transcript most likely closes, unchecked (-1: not found): before the last place
    its first member after the transcript is written as a key, or before the body's last `}`."""
    if not after:
        return close_of(body, 0, [], after)
    at = body.rfind(orjson.dumps(next(iter(after))))
    comma = last_byte(body, at) if at >= 0 else -1
    close = last_byte(body, comma) if comma >= 0 and body[comma] == ord(",") else -1
    return close if close >= 0 and body[close] == ord("]") else -1


def last_byte(body: bytes, before: int) -> int:
    """The index of the last byte before `before` that is not whitespace (-1: none)."""
    at = before - 1
    while at >= 0 and body[at] in WS:
        at -= 1
    return at
