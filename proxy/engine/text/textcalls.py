"""Calls and results that agents write as text, read as if they were tool calls.

Some agents keep their history in plain messages rather than `tool_calls` and `tool` results:

1. smolagents replays each step as an assistant message ending in `Calling tools:` and a
   Python list of the calls, and a user message `Observation:` with what they returned (or
   `Call id: ...` and `Error:` when the step failed).
2. aider runs the tests itself and sends the output as a user message (`I ran this command:`
   ... `And got this output:`), which it acknowledges with an assistant `Ok.` and then sends
   again as the next request; its edits are SEARCH/REPLACE blocks in the assistant's text.
3. Frameworks put context in user messages that no person wrote: aider's file and repository
   summaries (each acknowledged by an assistant `Ok, ...`), and blocks such as Codex's
   `<environment_context>` or `<user_instructions>`.

`proxy.engine.text.transcript` turns (1) and (2) into calls with results, so the failure model and
the loop patterns see them, and leaves (3) out of the person's messages (they start no new
episode, and `proxy.engine.text.identity` does not take them for the task). Every reader here is
linear in the text and returns nothing for text it does not recognise.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_CALL_LIST_CHARS",
    "Observation",
    "TextCall",
    "edit_blocks",
    "ends_examples",
    "is_acknowledgement",
    "is_framework_context",
    "numbered",
    "observation",
    "run_output",
    "written_calls",
]

MAX_CALL_LIST_CHARS = 200_000
"""A `Calling tools:` list longer than this is not parsed (it is read as plain text)."""

_CALLING = "Calling tools:\n"
_OBSERVATION = "Observation:\n"
_CALL_ID = "Call id: "
_ERROR = "Error:\n"
_RAN = "I ran this command:\n\n"
_GOT = "\n\nAnd got this output:\n\n"
_SEARCH = "<<<<<<< SEARCH\n"
_DIVIDER = "\n=======\n"
_REPLACE = ">>>>>>> REPLACE"
RUN_TOOL = "run_command"
"""The name a command an agent ran itself is given (its `command` argument is classified)."""
EDIT_TOOL = "edit_file"
"""The name a SEARCH/REPLACE block is given (an edit, by its name)."""

_CONTEXT_PREFIXES = (
    # aider (coders/base_prompts.py): files and repository summaries it shares, not a request
    "I have *added these files to the chat* so you can go ahead and edit them.",
    "Here are summaries of some files present in my git repository.",
    "Here are some READ ONLY files, provided for your reference.",
    "I am not sharing any files that you can edit yet.",
    "Don't try and edit any existing code without asking me to add the files to the chat!",
)
_EXAMPLES_END = "I switched to a new code base."
"""aider's worked examples (a request, a SEARCH/REPLACE reply, ...) end with this user message."""
_ACKNOWLEDGEMENTS = (
    "Ok.",
    "Ok, any changes I propose will be to those files.",
    "Ok, I won't try and edit those files without asking first.",
    "Ok, based on your requests I will suggest which files need to be edited and then stop and wait for your approval.",
)


@dataclass(frozen=True, slots=True)
class TextCall:
    """A call written as text: its id (when the agent gave one), tool and arguments."""

    id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Observation:
    """What a written call returned."""

    text: str
    is_error: bool
    call_id: str
    """The call it answers, when the agent says (`Call id:`); else empty: the open calls."""


def written_calls(text: str) -> list[TextCall]:
    """smolagents: the calls listed after `Calling tools:` at the end of an assistant message."""
    at = text.rfind(_CALLING)
    if at < 0 or len(text) - at > MAX_CALL_LIST_CHARS:
        return []
    try:
        listed = ast.literal_eval(text[at + len(_CALLING) :].strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError, SystemError):  # SystemError: see pywrites
        return []
    if not isinstance(listed, list):
        return []
    calls = []
    for entry in listed:
        function = entry.get("function") if isinstance(entry, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            arguments = {"code": arguments}  # a code agent's action: the code it ran
        call_id = entry.get("id")
        calls.append(
            TextCall(
                call_id if isinstance(call_id, str) else "",
                function["name"],
                arguments if isinstance(arguments, dict) else {},
            )
        )
    return calls


def observation(text: str) -> Observation | None:
    """smolagents: a user message carrying a step's result (`Observation:`) or error (`Call id:
    ...` then `Error:`)."""
    if text.startswith(_OBSERVATION):
        return Observation(text[len(_OBSERVATION) :], False, "")
    if text.startswith(_CALL_ID):
        line_end = text.find("\n")
        if line_end > 0 and text.startswith(_ERROR, line_end + 1):
            return Observation(text[line_end + 1 + len(_ERROR) :], True, text[len(_CALL_ID) : line_end].strip())
    if text.startswith(_ERROR):
        return Observation(text[len(_ERROR) :], True, "")
    return None


def run_output(text: str) -> tuple[str, str] | None:
    """aider: (command, output) of a command it ran and reported in a user message."""
    if not text.startswith(_RAN):
        return None
    split = text.find(_GOT, len(_RAN))
    if split < 0:
        return None
    return text[len(_RAN) : split].strip().strip("`").strip(), text[split + len(_GOT) :]


def edit_blocks(text: str) -> list[TextCall]:
    """aider: each SEARCH/REPLACE block of an assistant message, as an edit of its file (the
    path is the last line before the block that is not a code fence)."""
    blocks = []
    at = text.find(_SEARCH)
    while at >= 0:
        divider = text.find(_DIVIDER, at + len(_SEARCH))
        end = text.find(_REPLACE, divider + 1) if divider >= 0 else -1
        if end < 0:
            break
        before = [line.strip() for line in text[:at].splitlines()[-3:]]
        path = next((line for line in reversed(before) if line and not line.startswith("```")), "")
        old = text[at + len(_SEARCH) : divider]
        new = text[divider + len(_DIVIDER) : end].removesuffix("\n")
        blocks.append(TextCall("", EDIT_TOOL, {"path": path, "old_str": old, "new_str": new}))
        at = text.find(_SEARCH, end)
    return blocks


def is_acknowledgement(text: str) -> bool:
    """An assistant reply a framework writes to acknowledge its own context (aider's `Ok.`)."""
    return text.strip() in _ACKNOWLEDGEMENTS


def is_framework_context(text: str) -> bool:
    """A user message no person wrote: a framework's shared files or summaries, or nothing but
    tagged blocks (`<environment_context>...</environment_context>`)."""
    stripped = text.strip()
    if stripped.startswith(_CONTEXT_PREFIXES):
        return True
    return bool(stripped) and _only_tagged_blocks(stripped)


def _only_tagged_blocks(text: str) -> bool:
    at = 0
    while at < len(text):
        if text[at] != "<":
            return False
        close = text.find(">", at)
        tag = text[at + 1 : close] if close > 0 else ""
        if not tag or not all(c.isalnum() or c in "_-" for c in tag):
            return False
        end = text.find(f"</{tag}>", close)
        if end < 0:
            return False
        at = end + len(tag) + 3
        while at < len(text) and text[at] in " \t\r\n":
            at += 1
    return True


def numbered(keys: Sequence[str]) -> list[str]:
    """Ids for calls written as text that stay the same when a framework moves its messages
    around (aider sends its file listing again before its newest messages, so positions shift
    from one request to the next): each call's content digest, and how many times the same
    call came before it in the transcript."""
    seen: dict[str, int] = {}
    ids = []
    for key in keys:
        digest = hashlib.blake2b(key.encode("utf-8", "replace"), digest_size=8).hexdigest()
        seen[digest] = count = seen.get(digest, -1) + 1
        ids.append(f"text:{digest}:{count}")
    return ids


def same_report(earlier: tuple[str, str], later: tuple[str, str]) -> bool:
    """aider sends its newest command report twice, the second time with its reminder of the
    rules appended: the same report when the command is, and one output extends the other."""
    return earlier[0] == later[0] and (later[1].startswith(earlier[1]) or earlier[1].startswith(later[1]))


def ends_examples(text: str) -> bool:
    """The user message after which a framework's worked examples are over (aider's): what came
    before it is no person's request and no call of the model's."""
    return text.lstrip().startswith(_EXAMPLES_END)
