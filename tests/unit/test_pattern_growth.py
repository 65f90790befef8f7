"""Every pattern the package compiles reads in time linear in its input (issue #52: three of them,
found by hand, let one tool output stall a worker for seconds; nothing said the others were
linear). Not a list kept by hand: `regex_found` finds them, `regex_growth` builds each one's
inputs from its own pieces and times them at two sizes in the same run.

No wall-clock limit: a pattern fails when its time grows faster than its input, by a ratio
measured in one run (the best of a few runs of each size, in turns, in this thread's CPU time):
about 1 for a linear pattern (up to about 2 seen on a busy shared machine), 16 for a quadratic
one, infinite for one that runs away. A pattern over the bound on a first look is measured again,
five times, before it fails.
"""

from __future__ import annotations

import re

import pytest
from regex_found import every_pattern, unlisted_builders
from regex_growth import growth, hostile_inputs

PATTERNS = every_pattern()
BOUND = 4.0
"""Growth of the time over the input's past which a pattern fails."""


def _slowest(pattern: re.Pattern[str]) -> tuple[float, tuple[str, str, str]] | None:
    """The first input on which the pattern grows past the bound (confirmed), and how much."""
    for piece in hostile_inputs(pattern):
        if growth(pattern, piece) > BOUND and (confirmed := growth(pattern, piece, repeats=5)) > BOUND:
            return confirmed, piece
    return None


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_a_pattern_reads_in_time_linear_in_its_input(name: str) -> None:
    slow = _slowest(PATTERNS[name])
    assert slow is None, f"{name} ({PATTERNS[name].pattern!r}): time grew {slow[0]:.1f}x the input's on {slow[1]!r}"


def test_every_kind_of_pattern_is_found() -> None:
    """Held by a module, by an engine's policy, by a marker; written inside a function; built."""
    names = " ".join(PATTERNS)
    for where in (
        "proxy.engine.outputs.envelope._FRAMING",
        "preset:",
        "EVIDENCE_MARKERS",
        "proxy/engine/text/salvage.py:may_become_call",
        "proxy/engine/writing/imports.py:_importing",
    ):
        assert where in names
    assert len(PATTERNS) > 150


def test_a_pattern_built_from_run_time_text_is_listed_where_it_is_built() -> None:
    """A function that compiles what is not a literal is listed in `regex_found._built` (with one
    made as it would be, so that it is timed too) or `BUILT_ELSEWHERE` (its patterns are held)."""
    assert unlisted_builders() == []


@pytest.mark.parametrize(
    "pattern",
    [
        r"\S+@\S+:[^\n]*[#$] ?\s*$",  # the prompt line of envelope's framing at f9fdefc: cubic in a long word
        r'^\s*File "(?:[^"]*(?:site-packages|/lib/python\d[^"]*))[^"]*", line',  # normalise's at f9fdefc
        r"[ \t]*(?:edit[ \t]+\d+|append)",  # searched anywhere: a run of blanks read again from each
        r"(?m)^\s*Error:",  # a run of blank lines read again from each
    ],
)
def test_the_check_finds_a_pattern_that_is_not_linear(pattern: str) -> None:
    """The check itself, on shapes issue #52 found and shapes it did not."""
    assert _slowest(re.compile(pattern)) is not None
