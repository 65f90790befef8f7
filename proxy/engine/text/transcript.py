"""The transcript: a chat request's `messages` read as typed turns.

A turn is one assistant message and the tool results that answer its calls, paired by
`tool_call_id`. Anything odd (null or array content, parallel calls, unanswered calls, legacy
`function_call`, unknown roles, malformed arguments) is read as well as it can be, never raised
(one message at a time: `messages`). Calls and results an agent writes as text are read as
calls too: smolagents' and aider's (`textcalls`), a shell command in a fence or an XML function
call (mini-swe-agent 1.x, SWE-agent, OpenHands without native tools: `protocols`), the last
only once the next user message proves it a result; such a turn ends at the message that
carries its result, and is anchored there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from proxy.engine.text import protocols, textcalls
from proxy.engine.text.messages import Message, calls_of, content_text, is_error_flag, parse_arguments

__all__ = ["Message", "ToolCall", "Turn", "UserMessage", "read_turns"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call and, once answered, its result."""

    id: str
    name: str
    arguments: Mapping[str, Any] | None
    """Parsed arguments; None when the JSON is malformed or not an object."""
    raw_arguments: str
    result: str | None
    """The answering tool message's text; None while unanswered."""
    is_error: bool = False
    result_index: int | None = None
    """Index in `messages` of the answering tool message."""


@dataclass(frozen=True, slots=True)
class Turn:
    """An assistant message with its answered calls, or a text-only reply."""

    message_index: int
    text: str
    calls: tuple[ToolCall, ...]
    written: bool = False
    """Its calls and results were written as text (no ids in the messages to anchor on)."""
    protocol: str = ""
    """The text protocol its call was written in (`protocols`), when it was one of those."""

    @property
    def anchor(self) -> str:
        """Stable id of the turn's end: its last answered call, as `id@index` (the id, and where
        its result stands, for servers that reuse ids: see `plan.rewrite.anchor_positions`), or
        its last message's position (a text-only reply, calls written as text)."""
        answered = [c for c in self.calls if c.result is not None]
        if self.written or not answered:
            return f"msg:{self.end_index if self.written else self.message_index}"
        last = answered[-1]
        return f"{last.id}@{last.result_index}" if last.result_index is not None else last.id

    @property
    def end_index(self) -> int:
        """Index in `messages` of the turn's last message (its last result, or itself)."""
        indices = [c.result_index for c in self.calls if c.result_index is not None]
        return max(indices, default=self.message_index)


@dataclass(frozen=True, slots=True)
class UserMessage:
    message_index: int
    text: str
    answered: str = ""
    """The text of the model's reply right before it, if any (what a complaint is about)."""
    after: str = ""
    """What came right before it: `reply` (the model's reply, no call), `call` (a reply whose calls
    no result answered), `result` (a call's result), `user` (another user message), or "" (the
    start: no reply of the model's yet). After a result or a user message, the model's reply to
    them is not in the history: the agent dropped it."""


@dataclass(slots=True)
class _Open:
    """The assistant message being read and the results found for its calls so far."""

    index: int
    text: str
    calls: list[tuple[str, str, Any]]
    written: bool = False
    protocol: str = ""
    """The text protocol of a call written in the reply, not proven yet (`protocols`)."""
    results: dict[str, tuple[str, bool, int]] = field(default_factory=dict)

    def pending(self) -> list[str]:
        return [c[0] for c in self.calls if c[0] not in self.results]

    def turn(self) -> Turn:
        built: list[ToolCall] = []
        for call_id, name, raw in self.calls:
            arguments, raw_text = parse_arguments(raw)
            answer = self.results.get(call_id)
            built.append(
                ToolCall(
                    id=call_id,
                    name=name,
                    arguments=arguments,
                    raw_arguments=raw_text,
                    result=None if answer is None else answer[0],
                    is_error=False if answer is None else answer[1],
                    result_index=None if answer is None else answer[2],
                )
            )
        return Turn(self.index, self.text, tuple(built), self.written, self.protocol if self.results else "")


def _assistant(message: Message, index: int) -> _Open:
    text = content_text(message.get("content"))
    calls = calls_of(message, index)
    if calls:
        return _Open(index, text, calls)
    written = textcalls.written_calls(text)
    applied = [] if written else textcalls.edit_blocks(text)
    listed: list[tuple[str, str, Any]] = [
        (f"text:{index}:{k}", c.name, dict(c.arguments)) for k, c in enumerate(written or applied)
    ]
    if not listed and (tentative := protocols.written(text)) is not None:
        call = (f"text:{index}:0", tentative.call.name, dict(tentative.call.arguments))
        return _Open(index, text, [call], written=True, protocol=tentative.protocol)
    opened = _Open(index, text, listed, written=bool(listed))
    if applied:  # edits the agent applied itself: answered where they were written
        opened.results = {call_id: ("", False, index) for call_id, _name, _raw in listed}
    return opened


class _Reader:
    """`read_turns`' state between messages."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.users: list[UserMessage] = []
        self.open: _Open | None = None
        self.last_run: tuple[int, tuple[str, str]] | None = None
        """aider: the turn of the last command output it reported, and (command, output)."""
        self.previous = ""
        """What the last message read was (see `UserMessage.after`)."""

    def close(self) -> None:
        if self.open is not None:
            self.turns.append(self.open.turn())
        self.open = None

    def assistant(self, message: Message, index: int) -> None:
        if not calls_of(message, index) and textcalls.is_acknowledgement(content_text(message.get("content"))):
            return  # a framework acknowledging its own context: no turn of the model's
        self.close()
        self.last_run = None
        self.open = _assistant(message, index)
        self.previous = "call" if self.open.calls else "reply"

    def result(self, message: Message, index: int) -> None:
        if self.open is None:
            return
        pending = self.open.pending()
        call_id = message.get("tool_call_id")
        if not (isinstance(call_id, str) and call_id in pending):
            call_id = pending[0] if pending else None
        if call_id is not None:
            self.open.results[call_id] = (content_text(message.get("content")), is_error_flag(message), index)
            self.previous = "result"

    def user(self, message: Message, index: int) -> None:
        text = content_text(message.get("content"))
        answered = self.open.text if self.open is not None else ""
        if textcalls.ends_examples(text):
            self.turns, self.users, self.open, self.last_run = [], [], None, None
            return
        if self.open is not None and self.open.written and self.open.pending():
            protocol = self.open.protocol
            seen = protocols.observation(protocol, text) if protocol else textcalls.observation(text)
            if seen is not None:
                for call_id in self.open.pending():
                    self.open.results[call_id] = (seen.text, seen.is_error, index)
                self.previous = "result"
                return
            if protocol:  # no result came back: the reply only showed code
                self.open.calls, self.open.written, self.open.protocol = [], False, ""
        ran = textcalls.run_output(text)
        if ran is not None:
            self._ran(ran, text, index)
            self.previous = "result"
            return
        after = self.previous
        self.close()
        self.last_run = None
        if not textcalls.is_framework_context(text):
            self.users.append(UserMessage(index, text, answered, after))
            self.previous = "user"

    def _ran(self, ran: tuple[str, str], text: str, index: int) -> None:
        """aider's report of a command it ran: a turn of its own; the same report sent again
        (after its `Ok.`) extends that turn to here."""
        self.close()
        if self.last_run is not None and textcalls.same_report(self.last_run[1], ran):
            position = self.last_run[0]
            turn = self.turns[position]
            self.turns[position] = replace(turn, calls=tuple(replace(c, result_index=index) for c in turn.calls))
            return
        command, output = ran
        call = ToolCall(f"text:{index}", textcalls.RUN_TOOL, {"command": command}, command, output, False, index)
        self.turns.append(Turn(index, "", (call,), written=True))
        self.last_run = (len(self.turns) - 1, ran)


def read_turns(messages: Sequence[Any], start: int = 0) -> tuple[list[Turn], list[UserMessage]]:
    """Turns and user messages of `messages[start:]`, in order.

    Results are paired by `tool_call_id`; a legacy `function` message answers the nearest
    open legacy call; a `tool` message without an id answers the first open call. A user
    message a framework wrote (`textcalls.is_framework_context`) is not a person's message.
    """
    turns, users = _read(messages, start)
    if any(turn.written for turn in turns):  # ids by content, counted over the whole transcript
        every = _read(messages, 0)[0] if start else turns
        keys = [f"{c.name}\n{c.raw_arguments}" for t in every if t.written for c in t.calls]
        ids = iter(textcalls.numbered(keys))
        every = [replace(t, calls=tuple(replace(c, id=next(ids)) for c in t.calls)) if t.written else t for t in every]
        turns = [t for t in every if t.message_index >= start]
    return turns, users


def _read(messages: Sequence[Any], start: int) -> tuple[list[Turn], list[UserMessage]]:
    reader = _Reader()
    reader.previous = _before(messages, start)
    _feed(reader, messages, start, len(messages))
    reader.close()
    return reader.turns, reader.users


def _feed(reader: _Reader, messages: Sequence[Any], start: int, end: int) -> None:
    for index in range(start, end):
        message = messages[index]
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "assistant":
            reader.assistant(message, index)
        elif role in ("tool", "function"):
            reader.result(message, index)
        elif role == "user":
            reader.user(message, index)
        # system, developer and unknown roles carry no turn


def _before(messages: Sequence[Any], start: int) -> str:
    """What a read from the first message would have found right before `start` (`UserMessage.after`):
    read from the last assistant message before it, the reader's state there owes nothing to what
    came earlier. Without it a read of the new messages only took a user message standing where the
    model's reply should be (the agent's error in place of a reply it dropped) for one at the start,
    and an agent's rejections sent one per request never added up (OpenHands 1.0's "Missing required
    parameters" three times in a row, read whole: a format-error loop; read as the proxy reads it,
    request by request: none)."""
    at = start - 1
    while at >= 0 and not (isinstance(messages[at], dict) and messages[at].get("role") == "assistant"):
        at -= 1
    if at < 0:
        return ""
    reader = _Reader()
    _feed(reader, messages, at, start)
    return reader.previous
