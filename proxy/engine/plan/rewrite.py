"""Rewrite: place injections in a chat request, each right after the turn it belongs to.

An injection made at turn k is placed after turn k's last tool result in every later
request, so each rewritten prompt is a prefix of the next and upstream prefix caches stay
warm. Nothing is ever placed between an assistant's tool calls and their results.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cache
from itertools import count, repeat
from typing import Any

from proxy.engine.state.conversation import Injection
from proxy.settings.kinds import Placement

__all__ = ["anchor_positions", "apply_injections"]

_RESULTS = ("tool", "function")


def _end_of_results(messages: Sequence[Any], index: int) -> int:
    """The last index of the run of tool results right after `index`."""
    end = index
    while end + 1 < len(messages) and isinstance(messages[end + 1], dict) and messages[end + 1].get("role") in _RESULTS:
        end += 1
    return end


def _answered_at(messages: Sequence[Any]) -> dict[Any, int]:
    """Each tool call id answered in `messages` -> the index of the last message answering it.
    Read at C speed (no Python step per message) when every message is an object and every id
    hashable, as they are from any agent; otherwise one message at a time."""
    try:
        return dict(zip(map(dict.get, messages, repeat("tool_call_id")), count()))
    except TypeError:
        found: dict[Any, int] = {}
        for index, message in enumerate(messages):
            call_id = message.get("tool_call_id") if isinstance(message, dict) else None
            if isinstance(call_id, str):
                found[call_id] = index
        return found


def _by_id(anchor: str, messages: Sequence[Any], answered: Callable[[], Mapping[Any, int]]) -> int | None:
    """Where an `id@index` anchor (or a bare id) stands: at its own index, when that message
    answers the id (the id's only answer, or one of several, from a server that gives every call
    the same id); else at the id's last answer (`answered`, read only then: an anchor whose result
    has not moved costs no pass over the messages)."""
    call_id, at, index = anchor.rpartition("@")
    if not at or not index.isdigit():
        call_id, index = anchor, ""
    position = int(index) if index.isdecimal() else len(messages)  # isdigit() alone admits '²'
    at_position = messages[position] if position < len(messages) else None
    if isinstance(at_position, dict) and at_position.get("tool_call_id") == call_id:
        return position
    return answered().get(call_id)


def anchor_positions(messages: Sequence[Any], anchors: set[str]) -> dict[str, int]:
    """For each anchor found, the index of the last message of its turn (the end of the run
    of tool results that follows the anchor's result). Calls without ids (legacy
    `function_call`, servers that send none) are anchored by their assistant message's index."""
    found: dict[str, int] = {}
    answered = cache(lambda: _answered_at(messages))  # read once, and only if an anchor asks
    for anchor in anchors:
        index = _by_id(anchor, messages, answered)
        if index is not None:
            found[anchor] = _end_of_results(messages, index)
    for anchor in anchors - found.keys():
        kind, _, rest = anchor.partition(":")
        head = rest.split(":", 1)[0]
        if kind not in ("msg", "fn", "pos") or not head.isdigit() or int(head) >= len(messages):
            continue
        position = int(head)
        found[anchor] = position if kind == "msg" else _end_of_results(messages, position)
    return found


def _suffixed(message: Mapping[str, Any], text: str) -> dict[str, Any]:
    content = message.get("content")
    updated = dict(message)
    if isinstance(content, list):
        updated["content"] = [*content, {"type": "text", "text": text}]
    else:
        base = content if isinstance(content, str) else ""
        updated["content"] = f"{base}\n\n{text}" if base else text
    return updated


def apply_injections(
    messages: Sequence[Any], injections: Sequence[Injection], positions: Mapping[str, int] | None = None
) -> list[Any] | None:
    """`messages` with every injection whose turn is present placed after it; None when none is.

    `positions` (from `anchor_positions`) saves a second scan when the caller has it.
    """
    if positions is None:
        positions = anchor_positions(messages, {i.anchor for i in injections})
    placed = [i for i in injections if i.anchor in positions]
    if not placed:
        return None
    after: dict[int, list[dict[str, Any]]] = {}
    suffix: dict[int, list[str]] = {}
    for injection in placed:
        index = positions[injection.anchor]
        target = messages[index]
        is_tool = isinstance(target, dict) and target.get("role") in ("tool", "function")
        if injection.placement is Placement.TOOL_SUFFIX and is_tool:
            suffix.setdefault(index, []).append(injection.text)
            continue
        role = (
            "user"
            if injection.placement is Placement.USER or (not is_tool and injection.placement is Placement.TOOL_SUFFIX)
            else "system"
        )
        after.setdefault(index, []).append({"role": role, "content": injection.text})
    out: list[Any] = []
    start = 0
    for index in sorted(after.keys() | suffix.keys()):  # the messages between edits copied whole
        out.extend(messages[start:index])
        message = messages[index]
        out.append(_suffixed(message, "\n\n".join(suffix[index])) if index in suffix else message)
        out.extend(after.get(index, ()))
        start = index + 1
    out.extend(messages[start:])
    return out
