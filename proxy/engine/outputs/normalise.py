"""Normalisation: a failing output with run-to-run noise replaced, so its signature
(SHA-256 of the normalised evidence, see `evidence`) is stable across noise and sensitive to
real change.

Normalisation removes what changes between two runs of the same failure (colours,
timestamps, durations, memory addresses, temporary paths, PIDs, line numbers, the
process-specific frames of a traceback) and keeps what names the failure (error type,
message, failing test names).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from proxy.engine.text.deadline import checkpoint

__all__ = ["meaningful", "normalise", "normalise_line", "normalised_or_none", "strip_controls"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
"""CSI sequences, and OSC sequences up to their BEL or ST (or the next escape: never past it)."""
_PYTEST_TMP = re.compile(
    r"\bpytest-of-(?P<run>(?:(?:(?!pytest-of-)[\w-])*+pytest-of-)*+(?:(?!pytest-of-)[\w-])*+)(?P<tail>/pytest-\d+\b)?"
)
"""pytest's temporary folder, `pytest-of-USER/pytest-N`: from the first `pytest-of-` of a run of word
characters and dashes, the whole run taken at once (a later `pytest-of-` in the run ends where the
first does: trying each from its own start was quadratic)."""


def _pytest_tmp(match: re.Match[str]) -> str:
    """`<tmp>` for a temporary folder; the run as it was when the folder's number does not follow it."""
    return "<tmp>" if match["run"] and match["tail"] else match[0]


_SUBS: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str], tuple[str, ...]], ...] = (
    # (pattern, placeholder, literals of which a match holds at least one: a line with none of
    # them cannot match, so the pattern is not run on it; () runs it on every line)
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"), "<ts>", ("-",)),
    (re.compile(r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<ts>", (":",)),
    (re.compile(r"\b0x[0-9a-fA-F]{4,}\b"), "<addr>", ("0x",)),
    (re.compile(r"(?:/private)?/(?:tmp|var/folders|var/tmp)/[^\s:'\")]*"), "<tmp>", ("/tmp/", "/var/")),
    (_PYTEST_TMP, _pytest_tmp, ("pytest-of-",)),
    (re.compile(r"\b(?:pid|PID|process)[ =:]+\d+\b"), "pid <n>", ("pid", "PID", "process")),
    (re.compile(r"\bin \d+(?:\.\d+)?\s*(?:s|ms|sec|seconds|µs|us|ns|m)\b"), "in <t>", ("in ",)),
    (re.compile(r"\(\d+(?:\.\d+)?\s*(?:s|ms|sec|seconds)\)"), "(<t>)", ("(",)),
    (re.compile(r"\b\d+(?:\.\d+)?\s*(?:ms|µs|us|ns)\b"), "<t>", ("ms", "µs", "us", "ns")),
    (re.compile(r"\b\d+\.\d+s\b"), "<t>", (".",)),
    (re.compile(r"\[\s*\d+%\]"), "", ("%",)),
    (re.compile(r"(?<=[:(,])\d+(?=[:),])|(?<=line )\d+"), "N", (":", "(", ",", "line ")),
    (re.compile(r"\b[0-9a-f]{12,}\b"), "<hex>", ()),
)
_FRAME_NOISE = re.compile(
    r'^\s*+File "(?:(?=[^"]*(?:site-packages|dist-packages|/lib/python\d))|<frozen [^>]+>)[^"]*", line'
)
"""A library's frame: its quoted path holds an installed package's folder (looked ahead for, so the
path is read once, not once per place the folder could start), or a frozen module."""
_BLANKISH = re.compile(r"^[\s=\-_.*~^]*$")


def strip_controls(text: str) -> str:
    """Without ANSI colour and OSC sequences, line endings as `\n`."""
    return _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n")


def normalise_line(line: str) -> str:
    """One line with noise replaced by placeholders and whitespace collapsed."""
    for pattern, placeholder, literals in _SUBS:
        for literal in literals:
            if literal in line:
                break
        else:
            if literals:
                continue  # none of its literals: the pattern cannot match
        line = pattern.sub(placeholder, line)
    return " ".join(line.split())


def meaningful(line: str) -> bool:
    """Not a library frame of a traceback, not a rule or blank line."""
    return not (_FRAME_NOISE.match(line) or _BLANKISH.match(line))


_REMEMBERED_CHARS = 240
"""Lines up to this long are remembered (`normalised_or_none`): a bound on the memo's size."""


@lru_cache(maxsize=8192)
def _remembered(line: str) -> str | None:
    return normalise_line(line) if meaningful(line) else None


def normalised_or_none(line: str) -> str | None:
    """`normalise_line` of a meaningful line, None for one that is not. A pure function of the
    line, remembered for short lines: a check run again prints mostly the lines it printed
    before (the passing tests, the same traceback), and those cost a lookup, not a dozen
    patterns. Long lines are worked out every time (the memo holds at most 8192 short lines)."""
    if len(line) <= _REMEMBERED_CHARS:
        return _remembered(line)
    return normalise_line(line) if meaningful(line) else None


_LINES_PER_CHECK = 512
"""Lines normalised between two looks at the analysis's deadline (`text.deadline`)."""


def normalise(text: str) -> str:
    """The text with run-to-run noise replaced by placeholders; one line per meaningful line."""
    lines = strip_controls(text).split("\n")
    kept: list[str] = []
    for at in range(0, len(lines), _LINES_PER_CHECK):
        chunk = lines[at : at + _LINES_PER_CHECK]
        checkpoint(sum(map(len, chunk)))
        kept.extend(line for line in map(normalised_or_none, chunk) if line is not None)
    return "\n".join(kept)
