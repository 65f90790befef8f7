r"""Fast scanning of tool output for known markers.

A marker is a literal needle and, optionally, a pattern its line must also match. Needles
are found with plain substring search (C speed); the pattern only runs on the few lines that
hold a needle. Patterns are searched within one line, so `^` means the line's start.

A marker's pattern is asked only whether its line has it, and must read the line in time linear
in its length, whatever the line holds (`tests/unit/test_pattern_growth.py` checks every pattern).
So a pattern of parts in turn (`A.*B`) looks for each part once, from the first place it can start
on the line (`^(?>.*?A).*B`: a later `A` leaves no more room after it than the first), never again
from every place `A` starts; and no two repeats that can take the same characters stand side by
side (`\s*:?\s*` tries every split of a run of blanks): one of them takes the run whole (`\s*+`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

__all__ = ["Marker", "any_marker", "marked_lines"]


@dataclass(frozen=True, slots=True)
class Marker:
    needle: str
    pattern: re.Pattern[str] | None = None

    @classmethod
    def of(cls, needle: str, pattern: str | None = None) -> Marker:
        return cls(needle, re.compile(pattern, re.MULTILINE) if pattern else None)


def _lines_with(marker: Marker, text: str) -> Iterator[int]:
    """Start offsets of the lines holding the marker."""
    position = text.find(marker.needle)
    while position != -1:
        start = text.rfind("\n", 0, position) + 1
        end = text.find("\n", position)
        end = len(text) if end == -1 else end
        if marker.pattern is None or marker.pattern.search(text, start, end):
            yield start
        position = text.find(marker.needle, end)


def any_marker(markers: Sequence[Marker], text: str) -> bool:
    """Some marker is in `text`."""
    return any(next(_lines_with(marker, text), None) is not None for marker in markers)


def marked_lines(markers: Sequence[Marker], text: str) -> list[int]:
    """Start offsets of the lines of `text` that hold a marker, in order, each once."""
    starts: set[int] = set()
    for marker in markers:
        starts.update(_lines_with(marker, text))
    return sorted(starts)
