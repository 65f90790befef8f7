"""Results an agent frames as labelled fields, read by what the labels say.

Some agents hand a shell result back as a block of `Label: value` lines around the output:
gemini cli's shell tool (`Command:`, `Directory:`, `Output:`, `Error:`, `Exit Code:`, `Signal:`,
`Background PIDs:`, `Process Group PGID:`), Codex's (`Exit code:`, `Wall time:`, `Output:`).
Some of those lines change on every run though the command did the same thing (a process group
id, a wall time): two identical `git status --short` calls must read as one result. A list of
any one agent's volatile labels misses the next agent's; the labels that carry the result do
not change from agent to agent: its output and error streams and its exit status.

`bookkeeping_dropped` keeps those, and drops every other labelled line of the block at the
result's start and of the block at its end, when that block is an envelope: two label lines or
more, one of them naming a stream (output, stdout, stderr).

Must never: drop a line of the output itself (only the leading and trailing blocks of label
lines are read); drop an exit status, a stream or an error; read a report's own `Label: n`
summary lines as an envelope (no stream label among them: `Ran: 3` / `Failed: 1` stay).
"""

from __future__ import annotations

import re

__all__ = ["bookkeeping_dropped"]

_LABEL = re.compile(r"[A-Z][A-Za-z]{0,20}(?: [A-Za-z()]{1,20}){0,3}:(?:[ \t][^\n]*)?")
"""A label line: one to four words, the first capitalised, then a colon and the value."""
_STREAMS = ("output", "stdout", "stderr")
_KEPT = (*_STREAMS, "error", "exit", "return", "status", "signal", "result")
"""Words of a label that carries the result, not the agent's bookkeeping."""
_MAX_BLOCK = 12


def _label(line: str) -> str | None:
    """The lower-cased label of a label line, else None."""
    if len(line) > 400 or _LABEL.fullmatch(line) is None:
        return None
    return line.split(":", 1)[0].lower()


def _block(lines: list[str]) -> list[str]:
    """The labels of the label lines at the start of `lines` (at most `_MAX_BLOCK`)."""
    labels: list[str] = []
    for line in lines[:_MAX_BLOCK]:
        label = _label(line)
        if label is None:
            break
        labels.append(label)
    return labels


def _envelope(labels: list[str]) -> bool:
    return len(labels) >= 2 and any(word in label for label in labels for word in _STREAMS)


def _kept(label: str) -> bool:
    return any(word in label for word in _KEPT)


def bookkeeping_dropped(text: str) -> str:
    """`text` without the bookkeeping lines of its labelled envelope (see the module docstring);
    `text` itself when it has none."""
    if ":" not in text[:200] and ":" not in text[-400:]:
        return text
    lines = text.split("\n")
    head = _block(lines)
    tail = _block(lines[::-1])[::-1] if len(head) < len(lines) else []
    if not (_envelope(head) or _envelope(tail)):
        return text
    drop = {i for i, label in enumerate(head) if not _kept(label)}
    start = len(lines) - len(tail)
    drop |= {start + i for i, label in enumerate(tail) if not _kept(label)}
    return "\n".join(line for i, line in enumerate(lines) if i not in drop)
