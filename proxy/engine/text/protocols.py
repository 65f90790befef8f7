"""Agents that write their calls in the text of their replies, and get the results back as user
messages: the protocols read as sent, beside smolagents' and aider's (`textcalls`).

    fenced      one shell command in a fenced block, the reply's last (mini-swe-agent 1.x:
                ```bash, 2.x's text-based model: ```mswea_bash_command; SWE-agent's thought-action:
                any fence), answered by a user message that carries the command's output in the agent's own frame:
                `<returncode>N</returncode>` + `<output>` (mini-swe-agent), `OBSERVATION:`
                (SWE-agent 1.x), or the `(Open file: ...)` / `(Current directory: ...)` /
                `bash-$` footer (SWE-agent 0.x)
    function    `<function=NAME>` with `<parameter=KEY>VALUE</parameter>`s (SWE-agent's XML
                function calling; OpenHands' calls for models without native tools), answered
                by `OBSERVATION:` or `EXECUTION RESULT of [NAME]:`

A reply is read as a call only once the next user message proves it was one (it is that
protocol's observation): a reply that merely shows code, in a chat or a format error the
agent answers with its own complaint, is a text reply. Every reader is linear in the text
and returns nothing for text it does not recognise.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from proxy.engine.text.messages import content_text
from proxy.engine.text.textcalls import RUN_TOOL, Observation, TextCall

__all__ = ["FENCED", "FORMS", "FUNCTION", "RUN_TOOL", "Written", "observation", "shell_fence", "written"]

FENCED = "fenced"
FUNCTION = "function"
FORMS = {
    FENCED: "exactly one fenced block holding one shell command, fenced as your instructions show (such as "
    "```bash ... ```), and nothing after it",
    FUNCTION: "exactly one <function=NAME><parameter=KEY>VALUE</parameter></function> call",
}
"""Each protocol's call, in words: what an instruction asks for when the model made none. The fence
is the agent's own (mini-swe-agent 2.x's text-based model parses only ```mswea_bash_command)."""
MAX_REPLY_CHARS = 200_000
"""A reply longer than this is not searched for a written call."""

_FENCE = re.compile(r"^```[ \t]*+([\w+-]*+)[ \t]*\n(?:(?P<body>.*?)\n?^```[ \t]*$|.*)", re.MULTILINE | re.DOTALL)
"""A fenced block; an opening fence that no fence closes takes the rest of the text (and is no
block): no later one is closed either, and reading on from each of them was quadratic."""
_SHELL_TAGS = frozenset({"", "bash", "sh", "shell", "console", "zsh", "mswea_bash_command"})
"""A shell's fence tags; `mswea_bash_command` is mini-swe-agent 2.x's text-based model's (its `action_regex`)."""
_FUNCTION = re.compile(r"<function=([\w.-]+)>(.*?)(?:</function>|\Z)", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([\w.-]+)>(?:(?P<value>.*?)</parameter>|.*)", re.DOTALL)
"""A parameter; one that is not closed takes the rest of the text (none after it is closed either)."""
_RETURNCODE = re.compile(r"^\s*<returncode>\s*-?\d+\s*</returncode>")
_FOOTER = re.compile(
    r"(?:(?:\A|\n)(?>[^\n]*?\(Open file: )[^\n]*\)[^\S\n]*+\n\s*+\(Current directory: [^\n]*\)\s*+bash-\$\s*$"
    r"|\nbash-\$\s*$)"
)
"""SWE-agent 0.x's footer. Asked only whether a text has it: from a line's first `(Open file: `
(a later one on the line leaves no more room), and each run of whitespace taken whole."""
_OBSERVATION = "OBSERVATION:"
_ELIDED = re.compile(r"^Old output omitted \(\d+ lines?\)\s*\Z")
"""SWE-agent 0.x's history (`Last5Observations`): every observation but the last five, cut to this."""
_EXECUTION = re.compile(r"^\s*EXECUTION RESULT of \[([\w.-]+)\]:\s*\n?")


@dataclass(frozen=True, slots=True)
class Written:
    """The call a reply writes in one protocol (not yet proven: see the module's docstring)."""

    protocol: str
    call: TextCall


def _shell_block(text: str) -> re.Match[str] | None:
    """The reply's last closed fenced block, when that block is a shell's (the last is the one wanted)."""
    last = None
    for match in _FENCE.finditer(text):
        if match["body"] is not None:
            last = match
    return last if last is not None and last.group(1).lower() in _SHELL_TAGS else None


def _fenced(text: str) -> TextCall | None:
    """The shell command in the reply's last fenced block, when that block is a shell's."""
    last = _shell_block(text)
    if last is None:
        return None
    command = last["body"].strip()
    return TextCall("", RUN_TOOL, {"command": command}) if command else None


def shell_fence(messages: Sequence[Mapping[str, Any]], within: int = 8) -> str | None:
    """The tag of the shell fence the agent writes its calls in (a bash, mswea_bash_command or
    bare fence): its latest reply, among the last `within`, whose last closed block is a shell's."""
    seen = 0
    for message in reversed(messages):
        if message.get("role") != "assistant":
            continue
        seen += 1
        if seen > within:
            return None
        text = content_text(message.get("content"))
        if "```" in text and len(text) <= MAX_REPLY_CHARS and (block := _shell_block(text)) is not None:
            return str(block.group(1))
    return None


def _function(text: str) -> TextCall | None:
    """The reply's first `<function=NAME>` call and its parameters."""
    match = _FUNCTION.search(text)
    if match is None:
        return None
    found = _PARAMETER.finditer(match.group(2))
    arguments = {p.group(1): p["value"].strip("\n") for p in found if p["value"] is not None}
    return TextCall("", match.group(1), arguments)


def written(text: str) -> Written | None:
    """The call a reply writes as text, by the first protocol whose shape it has."""
    if len(text) > MAX_REPLY_CHARS:
        return None
    if "<function=" in text and (call := _function(text)) is not None:
        return Written(FUNCTION, call)
    if "```" in text and (call := _fenced(text)) is not None:
        return Written(FENCED, call)
    return None


def observation(protocol: str, text: str) -> Observation | None:
    """The result a user message carries for a call written in `protocol`; None when the
    message is no such result (the written call was no call)."""
    if text.lstrip().startswith(_OBSERVATION):
        return Observation(text.lstrip()[len(_OBSERVATION) :].lstrip("\n"), False, "")
    if protocol == FUNCTION:
        match = _EXECUTION.match(text)
        return Observation(text[match.end() :], False, "") if match else None
    if _RETURNCODE.match(text):
        return Observation(text, False, "")
    if _ELIDED.match(text):
        return Observation("", False, "")  # a result, whose words the history no longer has
    if _FOOTER.search(text[-400:]):
        return Observation(text, False, "")
    return None
