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

__all__ = ["SNIPPET_CHARS", "Evidence", "evidence", "normalise"]

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

_EVIDENCE_LINE = re.compile(
    r"^(?:FAILED|ERROR) \S+"  # pytest short summary
    r"|^E\s+\S"  # pytest assertion detail
    r"|^\S+:N: (?:in \S+|\w*(?:Error|Exception|Failure)\b)"  # pytest location line
    r"|^\s*(?:\w+\.)*\w*(?:Error|Exception|Exit|Interrupt)(?::|$)"  # Python exception line
    r"|^\s*[●✕×]\s+\S"  # jest
    r"|^\s*(?:Expected|Received)(?: value)?:"  # jest diff
    r"|^--- FAIL: |^FAIL\s"  # go
    r"|^\s*\S+_test\.go:N: "  # go assertion
    r"|^error(?:\[E\d+\])?: |^\s*--> \S+"  # rustc
    r"|panicked at |^\s*(?:left|right): "  # rust test
    r"|^---- \S+ stdout ----"  # cargo test
    r"|\berror TS\d+: "  # tsc
    r"|^\S+:N: error: "  # mypy
    r"|^\S+:N:N: [A-Z]+\d+ "  # ruff / flake8
    r"|^npm ERR! "
    r"|^\s*AssertionError",
)


@dataclass(frozen=True, slots=True)
class Evidence:
    """A failure as the fold keeps it."""

    signature: str
    snippet: str


def _strip(text: str) -> str:
    return _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n")


def _pairs(text: str) -> list[tuple[str, str]]:
    """(original line, normalised line) for each line that carries meaning."""
    pairs: list[tuple[str, str]] = []
    for raw in _strip(text).split("\n"):
        if _FRAME_NOISE.match(raw) or _BLANKISH.match(raw):
            continue
        line = raw
        for pattern, placeholder in _SUBS:
            line = pattern.sub(placeholder, line)
        pairs.append((raw.rstrip(), " ".join(line.split())))
    return pairs


def normalise(text: str) -> str:
    """The text with run-to-run noise replaced by placeholders; one line per meaningful line."""
    return "\n".join(norm for _, norm in _pairs(text))


def evidence(output: str) -> Evidence:
    """The signature and snippet of one failing result.

    The evidence is the output's recognisable failure lines (deduplicated, in order);
    when it has none, its normalised tail. The snippet quotes the same lines as printed.
    """
    pairs = _pairs(output)
    picked: list[tuple[str, str]] = []
    seen: set[str] = set()
    for raw, norm in pairs:
        if norm not in seen and _EVIDENCE_LINE.search(norm):
            seen.add(norm)
            picked.append((raw, norm))
            if len(picked) >= _MAX_EVIDENCE_LINES:
                break
    if picked:
        basis = "\n".join(norm for _, norm in picked)
        text = "\n".join(raw for raw, _ in picked)
    else:
        basis = "\n".join(norm for _, norm in pairs)[-4000:]
        text = "\n".join(raw for raw, _ in pairs[-12:])
    digest = hashlib.sha256(basis.encode("utf-8", "replace")).hexdigest()
    snippet = text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 3] + "..."
    return Evidence(signature=digest, snippet=snippet)
