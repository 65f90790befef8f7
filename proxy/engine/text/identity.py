"""Conversation and task identity, from the transcript alone (or the agent's headers).

A task is the person's request: the first user message a person wrote, not a system
prompt, a developer message, or a user message a framework wrote (Codex's
`<environment_context>`, aider's file summaries: `textcalls.is_framework_context`), so that
two runs of one request share what the first learned and an unrelated request in the same
directory shares nothing. `X-Repair-Task` overrides it (to scope memory by repository, say).
A conversation is its task plus its first assistant reply (whose tool-call ids are random
per run, so two runs of one task are two conversations). Both are the same on every replica
and after a restart.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from proxy.engine.text.messages import content_text
from proxy.engine.text.textcalls import ends_examples, is_framework_context

__all__ = ["CONVERSATION_HEADER", "TASK_HEADER", "conversation_id", "task_id"]

CONVERSATION_HEADER = "X-Repair-Conversation"
TASK_HEADER = "X-Repair-Task"
_ID_CHARS = 24
_EXAMPLES_WITHIN = 32
"""Worked examples come first: a marker of their end is looked for this far into a transcript."""


def _first(messages: Sequence[Any], role: str) -> Mapping[str, Any] | None:
    for message in messages:
        if isinstance(message, dict) and message.get("role") == role:
            return message
    return None


def _hash(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()[:_ID_CHARS]


def _text(message: Mapping[str, Any] | None) -> bytes:
    return b"" if message is None else content_text(message.get("content")).encode("utf-8", "replace")


def _request(messages: Sequence[Any]) -> bytes:
    """The person's request: the first user message that no framework wrote, after any worked
    examples a framework puts first (aider's), whitespace folded."""
    found = b""
    for index, message in enumerate(messages):
        if found and index >= _EXAMPLES_WITHIN:
            break
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        text = content_text(message.get("content"))
        if ends_examples(text):
            found = b""
        elif not found and text.strip() and not is_framework_context(text):
            found = " ".join(text.split()).encode("utf-8", "replace")
    return found


def task_id(messages: Sequence[Any], headers: Mapping[str, str]) -> str:
    given = headers.get(TASK_HEADER)
    if given:
        return given[:128]
    return _hash(b"task", _request(messages))


def conversation_id(messages: Sequence[Any], headers: Mapping[str, str]) -> str:
    given = headers.get(CONVERSATION_HEADER)
    if given:
        return given[:128]
    reply = _first(messages, "assistant")
    calls: bytes = b""
    if reply is not None:
        try:
            calls = orjson.dumps(reply.get("tool_calls") or reply.get("function_call"), option=orjson.OPT_SORT_KEYS)
        except TypeError:
            calls = repr(reply.get("tool_calls")).encode()
    return _hash(task_id(messages, headers).encode(), _text(reply), calls)
