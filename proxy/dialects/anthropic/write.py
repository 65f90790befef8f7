"""Anthropic Messages, an edit written back: every original message kept byte for byte, an
instruction put where Messages allows one: a `text` block right after the turn's last
`tool_result` block in the same user message (before any block that follows it there: Claude
Code's reminders), or at the start of the next user turn (after its own results), or a user
message of its own when none follows. Roles keep alternating; no `system` role is ever written
into `messages` (a `system` message there, as Claude Code sends one, is kept and never written
into). A retry that leaves messages out joins what that leaves side by side.

`force` is `tool_choice: {"type": "tool", "name"}`, a required call `{"type": "any"}` (the
request's `disable_parallel_tool_use` kept), except with thinking on, which Messages refuses
them with: then the instruction alone. A call schema is not sent (Messages has none to send).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from proxy.dialects.anthropic.request import SOURCE
from proxy.dialects.changes import REMOVED, Array, Change, Fresh, Kept, Value
from proxy.engine.text.exchange import Edit, Translation
from proxy.engine.text.messages import content_text

__all__ = ["changes"]


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _blocks(content: Any) -> list[Any]:
    return [_text_block(content)] if isinstance(content, str) else list(content) if isinstance(content, list) else []


def _appended(block: dict[str, Any], read_as: str, now: Any) -> dict[str, Any]:
    """A tool_result block with what an edit appended to its text (`tool_suffix`)."""
    now_text = now if isinstance(now, str) else content_text(now)
    added = now_text[len(read_as) :] if now_text.startswith(read_as) else f"\n\n{now_text}"
    inner = block.get("content")
    if isinstance(inner, list):
        return {**block, "content": [*inner, _text_block(added.lstrip("\n"))]}
    base = inner if isinstance(inner, str) else ""
    return {**block, "content": base + added if base else added.lstrip("\n")}


@dataclass
class _Plan:
    """Where each instruction goes: after (message, block), and which results were appended to."""

    after: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    appended: dict[tuple[int, int], tuple[str, Any]] = field(default_factory=dict)
    placed: set[int] = field(default_factory=set)
    translated: set[int] = field(default_factory=set)


def _plan(edit_messages: list[Any], translation: Translation) -> _Plan:
    plan = _Plan()
    plan.translated = {m[SOURCE][0] for m in translation.messages if isinstance(m, dict) and SOURCE in m}
    last = (-1, -1)
    for message in edit_messages:
        source = message.get(SOURCE) if isinstance(message, dict) else None
        if source is None:
            plan.after.setdefault(last, []).append(content_text(message.get("content")))
            continue
        last = (source[0], source[1])
        plan.placed.add(source[0])
        if message.get("role") == "tool" and message.get("content") != source[2]:
            plan.appended[last] = (source[2], message.get("content"))
    return plan


def _leading_results(blocks: list[Any]) -> int:
    """How many tool_result blocks a user message starts with (Messages wants them first)."""
    results = (isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)
    return next((i for i, result in enumerate(results) if not result), len(blocks))


def _inserted(message: dict[str, Any], at: int | None, texts: list[str]) -> dict[str, Any]:
    """A user message with `texts` as text blocks right after its block `at` (None: after its
    leading tool results, for instructions carried over from the assistant message before it)."""
    blocks = _blocks(message.get("content"))
    position = _leading_results(blocks) if at is None else at + 1
    return {**message, "content": [*blocks[:position], *map(_text_block, texts), *blocks[position:]]}


def _messages(data: dict[str, Any], edit: Edit, translation: Translation) -> list[Kept | Fresh]:
    originals: list[Any] = data["messages"]
    plan = _plan(edit.messages or [], translation)
    out: list[Kept | Fresh] = []
    carried = plan.after.get((-1, -1), [])  # instructions before any message: the first user turn's
    for index, message in enumerate(originals):
        if edit.leaves_out and index in plan.translated and index not in plan.placed:
            continue  # a message the retry leaves out
        mine = {k: v for k, v in plan.after.items() if k[0] == index}
        changed = {k: v for k, v in plan.appended.items() if k[0] == index}
        if message["role"] != "user":  # an instruction after it goes to the next user turn
            if carried and message["role"] == "assistant":
                out.append(Fresh({"role": "user", "content": list(map(_text_block, carried))}))
                carried = []
            out.append(Kept(index))
            carried += [t for texts in mine.values() for t in texts]
            continue
        if not (mine or changed or carried):
            out.append(Kept(index))
            continue
        fresh = message
        if changed:
            blocks = _blocks(fresh.get("content"))
            for (_, at), (read_as, now) in changed.items():
                blocks[at] = _appended(blocks[at], read_as, now)
            fresh = {**fresh, "content": blocks}
        for (_, at), texts in sorted(mine.items(), reverse=True):  # later places first: indices hold
            fresh = _inserted(fresh, at if at >= 0 else len(_blocks(fresh.get("content"))) - 1, texts)
        if carried:
            fresh = _inserted(fresh, None, carried)
            carried = []
        out.append(Fresh(fresh))
    if carried:
        out.append(Fresh({"role": "user", "content": list(map(_text_block, carried))}))
    return _alternating(originals, out) if edit.leaves_out else out


def _alternating(originals: list[Any], items: list[Kept | Fresh]) -> list[Kept | Fresh]:
    """Messages left out may leave two of one role side by side: each such pair made one."""
    out: list[Kept | Fresh] = []
    for item in items:
        message = originals[item.index] if isinstance(item, Kept) else item.value
        before = (originals[out[-1].index] if isinstance(out[-1], Kept) else out[-1].value) if out else None
        if before is not None and before.get("role") == message.get("role"):
            joined = [*_blocks(before.get("content")), *_blocks(message.get("content"))]
            out[-1] = Fresh({**before, "content": joined})
        else:
            out.append(item)
    return out


def _forces(data: dict[str, Any]) -> bool:
    """Whether a tool may be forced: Messages refuses `tool_choice` `any` or `tool` with thinking on."""
    thinking = data.get("thinking")
    return not (isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive"))


def changes(data: dict[str, Any], edit: Edit, translation: Translation) -> dict[str, Change]:
    """What an edit changes in a Messages request, member by member (a call schema is not sent:
    Messages constrains a reply by `tool_choice`)."""
    out: dict[str, Change] = {}
    if edit.messages is not None:
        out["messages"] = Array(_messages(data, edit, translation))
    choice = data.get("tool_choice")
    if edit.tools is not None:
        tools = data.get("tools") or []
        out["tools"] = Array(
            [Kept(i) for i, t in enumerate(tools) if isinstance(t, dict) and t.get("name") in edit.tools]
        )
        if isinstance(choice, dict) and choice.get("type") == "tool" and choice.get("name") not in edit.tools:
            out["tool_choice"] = REMOVED
    kept = {k: v for k, v in choice.items() if k == "disable_parallel_tool_use"} if isinstance(choice, dict) else {}
    if edit.tool_choice is not None and _forces(data):
        out["tool_choice"] = Value({"type": "tool", "name": edit.tool_choice, **kept})
    elif edit.require_call and _forces(data):
        out["tool_choice"] = Value({"type": "any", **kept})
    return out
