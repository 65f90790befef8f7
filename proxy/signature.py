"""Failure signatures: SHA-256 of the normalised failure evidence.

Normalisation removes what changes between two runs of the same failure (colours,
timestamps, durations, memory addresses, temporary paths, PIDs, line numbers, the
process-specific frames of a traceback) and keeps what names the failure (error type,
message, failing test names). When the output has recognisable failure lines, only those
are the evidence, so a summary count that moves because another test started passing does
not make a new failure.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from proxy.textscan import Marker, marked_lines

__all__ = ["EVIDENCE_MARKERS", "SNIPPET_CHARS", "Evidence", "evidence", "normalise"]

SNIPPET_CHARS = 600
"""Longest failure snippet quoted back to the model."""
_MAX_EVIDENCE_LINES = 40

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
_SUBS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"), "<ts>"),
    (re.compile(r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<ts>"),
    (re.compile(r"\b0x[0-9a-fA-F]{4,}\b"), "<addr>"),
    (re.compile(r"(?:/private)?/(?:tmp|var/folders|var/tmp)/[^\s:'\")]*"), "<tmp>"),
    (re.compile(r"\bpytest-of-[\w-]+/pytest-\d+\b"), "<tmp>"),
    (re.compile(r"\b(?:pid|PID|process)[ =:]+\d+\b"), "pid <n>"),
    (re.compile(r"\bin \d+(?:\.\d+)?\s*(?:s|ms|sec|seconds|µs|us|ns|m)\b"), "in <t>"),
    (re.compile(r"\(\d+(?:\.\d+)?\s*(?:s|ms|sec|seconds)\)"), "(<t>)"),
    (re.compile(r"\b\d+(?:\.\d+)?\s*(?:ms|µs|us|ns)\b"), "<t>"),
    (re.compile(r"\b\d+\.\d+s\b"), "<t>"),
    (re.compile(r"\[\s*\d+%\]"), ""),
    (re.compile(r"(?<=[:(,])\d+(?=[:),])|(?<=line )\d+"), "N"),
    (re.compile(r"\b[0-9a-f]{12,}\b"), "<hex>"),
)
_FRAME_NOISE = re.compile(
    r'^\s*File "(?:[^"]*(?:site-packages|dist-packages|/lib/python\d[^"]*)|<frozen [^>]+>)[^"]*", line'
)
_BLANKISH = re.compile(r"^[\s=\-_.*~^]*$")

EVIDENCE_MARKERS = (
    Marker.of("FAILED ", r"^FAILED \S+"),  # pytest short summary
    Marker.of("ERROR ", r"^ERROR \S+"),
    Marker.of("E ", r"^E\s+\S"),  # pytest assertion detail
    Marker.of(": ", r"^\S+:\d+: (?:in \S+|\w*(?:Error|Exception|Failure)\b)"),  # pytest location
    Marker.of("Error", r"^\s*(?:\w+\.)*\w*Error(?::|$)"),  # Python exception line
    Marker.of("Exception", r"^\s*(?:\w+\.)*\w*Exception(?::|$)"),
    Marker.of("●", r"^\s*●\s+\S"),  # jest
    Marker.of("✕", r"^\s*✕\s+\S"),
    Marker.of("Expected", r"^\s*Expected(?: value)?:"),
    Marker.of("Received", r"^\s*Received(?: value)?:"),
    Marker.of("--- FAIL: "),  # go
    Marker.of("FAIL", r"^FAIL\s"),
    Marker.of("_test.go:", r"^\s*\S+_test\.go:\d+: "),
    Marker.of("error", r"^error(?:\[E\d+\])?: "),  # rustc
    Marker.of("-->", r"^\s*--> \S+"),
    Marker.of("panicked at "),
    Marker.of("left", r"^\s*left: "),
    Marker.of("right", r"^\s*right: "),
    Marker.of("---- ", r"^---- \S+ stdout ----"),  # cargo test
    Marker.of("error TS", r"\berror TS\d+: "),  # tsc
    Marker.of(": error: ", r"^\S+:\d+: error: "),  # mypy
    Marker.of(": ", r"^\S+:\d+:\d+: [A-Z]+\d+ "),  # ruff / flake8
    Marker.of("npm ERR! "),
    Marker.of("AssertionError"),
)
"""Lines that name a failure; when an output has any, they alone are its evidence."""
_TAIL_LINES = 60


@dataclass(frozen=True, slots=True)
class Evidence:
    """A failure as the fold keeps it."""

    signature: str
    snippet: str


def _strip(text: str) -> str:
    return _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n")


def _normalise_line(line: str) -> str:
    for pattern, placeholder in _SUBS:
        line = pattern.sub(placeholder, line)
    return " ".join(line.split())


def _meaningful(line: str) -> bool:
    return not (_FRAME_NOISE.match(line) or _BLANKISH.match(line))


def normalise(text: str) -> str:
    """The text with run-to-run noise replaced by placeholders; one line per meaningful line."""
    return "\n".join(_normalise_line(line) for line in _strip(text).split("\n") if _meaningful(line))


def evidence(output: str) -> Evidence:
    """The signature and snippet of one failing result.

    The evidence is the output's failure lines (deduplicated by their normalised form, in
    order); when it has none, its normalised tail. The snippet quotes the same lines as printed.
    """
    text = _strip(output) + "\n"
    picked: list[tuple[str, str]] = []
    seen: set[str] = set()
    for start in marked_lines(EVIDENCE_MARKERS, text):
        end = text.find("\n", start)
        raw = text[start : end if end != -1 else len(text)].rstrip()
        if not _meaningful(raw):
            continue
        norm = _normalise_line(raw)
        if norm not in seen:
            seen.add(norm)
            picked.append((raw, norm))
            if len(picked) >= _MAX_EVIDENCE_LINES:
                break
    if not picked:
        tail = [line.rstrip() for line in text.split("\n")[-_TAIL_LINES:] if _meaningful(line)]
        picked = [(raw, _normalise_line(raw)) for raw in tail]
        basis = "\n".join(norm for _, norm in picked)[-4000:]
        quoted = picked[-12:]
    else:
        basis = "\n".join(norm for _, norm in picked)
        quoted = picked
    digest = hashlib.sha256(basis.encode("utf-8", "replace")).hexdigest()
    snippet = "\n".join(raw for raw, _ in quoted)
    if len(snippet) > SNIPPET_CHARS:
        snippet = snippet[: SNIPPET_CHARS - 3] + "..."
    return Evidence(signature=digest, snippet=snippet)
