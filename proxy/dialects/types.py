"""What every dialect provides: a translation into chat-style turns and back, and its own
reply shapes. The fold and the detectors never know which dialect they serve."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from proxy.handback import Handback

__all__ = ["Dialect", "Edit", "Translation"]


@dataclass(frozen=True, slots=True)
class Translation:
    """A request read as chat-completions messages and tools."""

    messages: list[Any]
    tools: list[Any] | None
    stream: bool
    model: str


@dataclass(frozen=True, slots=True)
class Edit:
    """What the plan changes, in chat terms; None leaves that part of the request as it came."""

    messages: list[Any] | None = None
    tool_choice: str | None = None
    """The one tool to force."""
    tools: list[str] | None = None
    """The names of the tools to keep."""


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str
    read: Callable[[dict[str, Any]], Translation | None]
    """None: not analysable (forwarded untouched)."""
    write: Callable[[dict[str, Any], Translation, Edit], dict[str, Any]]
    reply_acts: Callable[[bytes], bool]
    """A whole reply calls a tool."""
    stream_watcher: Callable[[], Callable[[bytes], bool]]
    """A fresh detector fed raw stream chunks: True once the reply is calling a tool."""
    handback: Callable[[Handback, str, bool], tuple[bytes, str]]
    """The hand-back as this dialect's reply: (body, content type)."""
