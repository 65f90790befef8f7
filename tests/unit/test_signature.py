"""Failure signatures: stable across noise, different when the error really changes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.engine.outputs import normalise as signature
from proxy.engine.outputs.evidence import SNIPPET_CHARS, evidence
from proxy.engine.outputs.normalise import normalise, normalise_line

OUTPUTS = Path(__file__).resolve().parents[1] / "scenarios" / "outputs"
RUNNERS = ["pytest_addition", "jest", "cargo", "go", "tsc", "python_traceback"]


def read(name: str) -> str:
    return (OUTPUTS / f"{name}.txt").read_text()


def variant(runner: str, which: str) -> str:
    if runner == "pytest_addition" and which == "other":
        return read("pytest_addition_other_value")
    return read(f"{runner}_{which}")


@pytest.mark.parametrize("runner", RUNNERS)
def test_same_failure_with_different_noise_matches(runner: str) -> None:
    """Timings, temp paths, addresses, build hashes and shifted line numbers do not change the signature."""
    assert evidence(variant(runner, "a")).signature == evidence(variant(runner, "b")).signature


@pytest.mark.parametrize("runner", RUNNERS)
def test_really_different_failure_does_not_match(runner: str) -> None:
    """A changed assertion value, error type or message changes the signature."""
    assert evidence(variant(runner, "a")).signature != evidence(variant(runner, "other")).signature


def test_normalise_strips_colour_and_noise() -> None:
    """ANSI colour, ISO timestamps, durations, addresses, tmp paths and PIDs become placeholders."""
    raw = "\x1b[31mFAILED\x1b[0m at 2026-11-22T04:38:33.123Z in 0.31s obj 0x7f3a2c1b9e50 /tmp/tmpab12/x.py pid 4242"
    assert normalise(raw) == "FAILED at <ts> in <t> obj <addr> <tmp> pid <n>"


def test_snippet_quotes_the_failure_lines_as_printed() -> None:
    """The snippet is the failing lines of the original output, not normalised text."""
    found = evidence(read("pytest_addition_a"))
    assert "FAILED tests/test_parse.py::test_addition - AssertionError: assert 4 == 3" in found.snippet
    assert "E       AssertionError: assert 4 == 3" in found.snippet
    assert "tests/test_parse.py:12: AssertionError" in found.snippet


def test_summary_count_change_alone_is_the_same_failure() -> None:
    """Another test starting to pass does not make the live failure a new one."""
    more_passing = (
        read("pytest_addition_a").replace("1 failed, 3 passed", "1 failed, 7 passed").replace(".F..", ".F......")
    )
    assert evidence(more_passing).signature == evidence(read("pytest_addition_a")).signature


def test_unrecognised_output_uses_its_normalised_tail() -> None:
    """Output with no known failure lines is still signed (by its tail), and snippets stay short."""
    first = evidence("make: *** [all] Error 2\n" * 3 + "x" * 5000)
    second = evidence("make: *** [all] Error 2\n" * 3 + "x" * 5000)
    assert first.signature == second.signature
    assert len(first.snippet) <= SNIPPET_CHARS


def test_signature_is_sha256_hex() -> None:
    """Signatures are SHA-256 hex digests."""
    assert len(evidence("E   boom").signature) == 64


_NOISY_PIECES = st.sampled_from(
    [
        " ",
        "a",
        "E",
        "x",
        "0",
        "7",
        "12",
        "2024-05-01",
        "T",
        "10:20:30",
        ".5",
        ",",
        ":",
        "(",
        ")",
        "-",
        "0x",
        "dead",
        "beefcafe0123",
        "/tmp/",
        "/var/",
        "folders/",
        "pytest-of-",
        "me/pytest-",
        "pid",
        "PID",
        "process",
        "=",
        "in ",
        "ms",
        "µs",
        "us",
        "ns",
        "s",
        "sec",
        "%",
        "[",
        "]",
        "line ",
        "m",
        "Z",
        "+02:00",
    ]
)


@settings(max_examples=2000, deadline=None)
@given(st.lists(_NOISY_PIECES, max_size=24).map("".join))
def test_a_pattern_skipped_for_want_of_its_literals_would_have_changed_nothing(line: str) -> None:
    """`normalise_line` runs a pattern only on a line holding one of its literals; with every
    pattern run on every line, the result is the same."""
    every = line
    for pattern, placeholder, _literals in signature._SUBS:
        every = pattern.sub(placeholder, every)
    assert normalise_line(line) == " ".join(every.split())
