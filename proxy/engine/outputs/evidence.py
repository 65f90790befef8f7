"""Evidence: what a failing output says, for the failure model and the remedies.

`evidence` gives its signature (SHA-256 of the normalised failure lines; when it has none,
of its normalised tail, so a summary count that moves because another test started passing
does not make a new failure) and the snippet quoted back to the model. Neither ever holds
noise (warnings, "Exception ignored", pip's notes: `noise.noise_line`) nor the agent's
framing of every result (`envelope.payload`): two different failures printed under the same
warning are two failures. `extract_pointers`
gives what a next step can name: for pytest, unittest, jest/vitest, go test, cargo test,
tsc, mypy, ruff/flake8 and Python tracebacks, the failing test (id and file) and the source
file and line of the failure.
Nothing is invented: a field the output does not state stays None.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from proxy.engine.outputs.envelope import payload
from proxy.engine.outputs.noise import noise_line
from proxy.engine.outputs.normalise import normalised_or_none, strip_controls
from proxy.engine.outputs.textscan import Marker, marked_lines
from proxy.engine.text.deadline import checkpoint

__all__ = [
    "EVIDENCE_MARKERS",
    "SNIPPET_CHARS",
    "Evidence",
    "Pointers",
    "evidence",
    "evidence_lines",
    "extract_pointers",
    "in_library",
    "line_digest",
    "project_frames",
]

SNIPPET_CHARS = 600
"""Longest failure snippet quoted back to the model."""
_MAX_EVIDENCE_LINES = 40
_TAIL_LINES = 60
LINE_CHARS = 500
"""Longest stretch of one line read as evidence (the rest of a longer line is not evidence)."""

EVIDENCE_MARKERS = (
    Marker.of("FAILED ", r"^FAILED \S+"),  # pytest short summary
    Marker.of("ERROR ", r"^ERROR \S+"),
    Marker.of("E ", r"^E\s+\S"),  # pytest assertion detail
    Marker.of(": ", r"^\S+:\d+: (?:in \S+|\w*(?:Error|Exception|Failure)\b)"),  # pytest location
    Marker.of("Error", r"^[^\S\n]*+(?:\w+\.)*\w*Error(?::|$)"),  # Python exception line
    Marker.of("Exception", r"^[^\S\n]*+(?:\w+\.)*\w*Exception(?::|$)"),
    Marker.of("●", r"^[^\S\n]*+●\s+\S"),  # jest
    Marker.of("✕", r"^[^\S\n]*+✕\s+\S"),
    Marker.of("Expected", r"^[^\S\n]*+Expected(?: value)?:"),
    Marker.of("Received", r"^[^\S\n]*+Received(?: value)?:"),
    Marker.of("--- FAIL: "),  # go
    Marker.of("FAIL", r"^FAIL\s"),
    Marker.of("_test.go:", r"^[^\S\n]*+\S+_test\.go:\d+: "),
    Marker.of("error", r"^error(?:\[E\d+\])?: "),  # rustc
    Marker.of("-->", r"^[^\S\n]*+--> \S+"),
    Marker.of("panicked at "),
    Marker.of("left", r"^[^\S\n]*+left: "),
    Marker.of("right", r"^[^\S\n]*+right: "),
    Marker.of("---- ", r"^---- \S+ stdout ----"),  # cargo test
    Marker.of("error TS", r"\berror TS\d+: "),  # tsc
    Marker.of(": error: ", r"^\S+:\d+: error: "),  # mypy
    Marker.of(": ", r"^\S+:\d+:\d+: [A-Z]+\d+ "),  # ruff / flake8
    Marker.of("npm ERR! "),
    Marker.of("AssertionError"),
)
"""Lines that name a failure; when an output has any, they alone are its evidence."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """A failure as the fold keeps it."""

    signature: str
    snippet: str


_LIBRARY = re.compile(r"(?:site-packages|dist-packages|/lib/python\d|^<.*>$|node_modules|/rustc/|/usr/lib/go)")
"""Frames that are not the project's own files: libraries, and code given inline (`<string>`, `<stdin>`,
`<frozen ...>`), which has no file to open."""


@dataclass(frozen=True, slots=True)
class Pointers:
    test_id: str | None = None
    """The failing test as its runner names it (pytest node id, jest title, Go/Rust test name)."""
    test_file: str | None = None
    source_file: str | None = None
    """Where the failure is reported: the deepest project frame, or the compiler's location."""
    source_line: int | None = None

    @property
    def empty(self) -> bool:
        return self.test_id is None and self.test_file is None and self.source_file is None


_PYTEST_ID = re.compile(r"^(?:FAILED|ERROR) (?P<file>[^\s:]+\.py)::(?P<test>\S+?)(?: - |$)", re.MULTILINE)
_PYTEST_LOCATION = re.compile(
    r"^(?P<file>[^\s:]+\.py):(?P<line>\d+): (?:in \S+|\w*(?:Error|Exception)\b)", re.MULTILINE
)
_PYTEST_COLLECT = re.compile(
    r"^ERROR (?P<file>[^\s:]+\.py)(?: - .*)?$|ERROR collecting (?P<header>[^\s:]+\.py) _", re.MULTILINE
)
"""A test module pytest could not import: its short summary line (no test id), or its section header."""
_PYTEST_RAISED_FRAME = re.compile(r'^E[ \t]+File "(?P<file>[^"]+)", line (?P<line>\d+)[ \t]*$', re.MULTILINE)
"""The file and line a `SyntaxError` names, as pytest prints the exception (each line after `E`)."""
_IMPORTED_FROM = re.compile(
    r"^E\s+ImportError: cannot import name '[^']+' from '[^']+' \((?P<file>[^()\s]+\.py)\)", re.MULTILINE
)
"""The module a name could not be imported from, with its file, as pytest shows the error."""
_UNITTEST = re.compile(r"^(?:FAIL|ERROR): (?P<test>\w+) \((?P<where>[\w.]+)\)", re.MULTILINE)
_PY_FRAME = re.compile(r'^[ \t]*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in \S+|[ \t]*$)', re.MULTILINE)
"""A traceback's frame, or the file a `SyntaxError` names (no function: it did not parse), which
is the failure's place, not the `import` frame above it."""
_JEST_FILE = re.compile(r"^[ \t]*FAIL\s+(?P<file>\S+\.(?:[jt]sx?|mjs|cjs))", re.MULTILINE)
_JEST_TITLE = re.compile(r"^[ \t]*●\s+(?P<title>.+?)\s*$", re.MULTILINE)
_JEST_AT = re.compile(r"\((?P<file>[^\s()]+\.(?:[jt]sx?|mjs|cjs)):(?P<line>\d+):\d+\)")
_VITEST = re.compile(r"^[ \t]*FAIL\s+(?P<file>\S+\.(?:[jt]sx?|mjs|cjs)) > (?P<title>.+?)\s*$", re.MULTILINE)
_VITEST_AT = re.compile(r"^[ \t]*❯ (?P<file>\S+\.(?:[jt]sx?|mjs|cjs)):(?P<line>\d+):\d+", re.MULTILINE)
_GO_FAIL = re.compile(r"^[ \t]*--- FAIL: (?P<test>\S+)", re.MULTILINE)
_GO_AT = re.compile(r"^[ \t]+(?P<file>\S+_test\.go):(?P<line>\d+): ", re.MULTILINE)
_CARGO_TEST = re.compile(r"^---- (?P<test>\S+) stdout ----", re.MULTILINE)
_RUST_PANIC = re.compile(r"panicked at (?P<file>[^\s:]+\.rs):(?P<line>\d+):\d+")
_RUST_ERROR_AT = re.compile(r"^[ \t]*--> (?P<file>[^\s:]+\.rs):(?P<line>\d+):\d+", re.MULTILINE)
_TSC = re.compile(r"^(?P<file>[^\s(]+\.tsx?)\((?P<line>\d+),\d+\): error TS\d+", re.MULTILINE)
_MYPY = re.compile(r"^(?P<file>[^\s:]+\.pyi?):(?P<line>\d+): error: ", re.MULTILINE)
_RUFF = re.compile(r"^(?P<file>[^\s:]+\.\w+):(?P<line>\d+):\d+: [A-Z]+\d+ ", re.MULTILINE)


def in_library(path: str) -> bool:
    """`path` is no file of the project's: an installed library's, the interpreter's own (its
    `importlib`, `unittest`), or code given inline."""
    return bool(_LIBRARY.search(path))


def project_frames(text: str) -> list[tuple[str, int]]:
    """The Python traceback frames in `text` outside installed libraries: (file, line), outermost first."""
    return [(m["file"], int(m["line"])) for m in _PY_FRAME.finditer(text) if not _LIBRARY.search(m["file"])]


def _project_frame(text: str) -> tuple[str, int] | None:
    frames = project_frames(text)
    return frames[-1] if frames else None


def _collection_error(text: str, test_file: str) -> Pointers:
    """A test module that did not import: no test ran. Where it broke: the file and line a
    `SyntaxError` names, else the deepest frame pytest shows outside the test module (the code
    it imports, raising as it loads), else the project's module a name could not be imported
    from (`ImportError: cannot import name 'Stack' from 'stack' (/work/stack/stack.py)`), else the
    test module's own line. Never a frame of the interpreter's or a library's: pytest shows its
    `importlib/__init__.py:126: in import_module` above the test module's import, and the proxy
    pinned a view of it, lines 111-141, twice (issue 51)."""
    raised = [(m["file"], int(m["line"])) for m in _PYTEST_RAISED_FRAME.finditer(text) if not in_library(m["file"])]
    frame = (raised[-1] if raised else None) or _pytest_frame(text, test_file, elsewhere=True)
    if frame is None and (m := _IMPORTED_FROM.search(text)) and not in_library(m["file"]):
        return Pointers(None, test_file, m["file"], None)
    frame = frame or _pytest_frame(text, test_file)
    return Pointers(None, test_file, *(frame or (None, None)))


def _pytest_frame(text: str, test_file: str, elsewhere: bool = False) -> tuple[str, int] | None:
    """The deepest location pytest shows outside the test file (the code under test), else its
    last (`elsewhere`: None instead); the interpreter's and libraries' frames are passed over."""
    locations = [(x["file"], int(x["line"])) for x in _PYTEST_LOCATION.finditer(text) if not in_library(x["file"])]
    source = next((loc for loc in reversed(locations) if loc[0] != test_file), None)
    return source or (None if elsewhere or not locations else locations[-1])


def extract_pointers(output: str) -> Pointers:
    """The failing test and failure location an output states, if it states them."""
    text = output.replace("\r\n", "\n")
    if m := _PYTEST_ID.search(text):
        frame = _pytest_frame(text, m["file"])
        return Pointers(f"{m['file']}::{m['test']}", m["file"], *(frame or (None, None)))
    if m := _PYTEST_COLLECT.search(text):
        return _collection_error(text, m["file"] or m["header"])
    if m := _UNITTEST.search(text):
        frame = _project_frame(text)
        test_file = frame[0] if frame and "test" in frame[0].rsplit("/", 1)[-1] else None
        return Pointers(f"{m['where']}", test_file, *(frame or (None, None)))
    if m := _VITEST.search(text):
        at = _VITEST_AT.search(text)
        return Pointers(m["title"], m["file"], at["file"] if at else None, int(at["line"]) if at else None)
    if m := _JEST_TITLE.search(text):
        at = _JEST_AT.search(text)
        file = _JEST_FILE.search(text)
        return Pointers(
            m["title"],
            file["file"] if file else (at["file"] if at else None),
            at["file"] if at else None,
            int(at["line"]) if at else None,
        )
    if m := _GO_FAIL.search(text):
        at = _GO_AT.search(text)
        return Pointers(
            m["test"], at["file"] if at else None, at["file"] if at else None, int(at["line"]) if at else None
        )
    if m := _CARGO_TEST.search(text):
        at = _RUST_PANIC.search(text)
        return Pointers(m["test"], None, at["file"] if at else None, int(at["line"]) if at else None)
    for pattern in (_TSC, _MYPY, _RUFF, _RUST_ERROR_AT):
        if m := pattern.search(text):
            return Pointers(None, None, m["file"], int(m["line"]))
    if m := _RUST_PANIC.search(text):
        return Pointers(None, None, m["file"], int(m["line"]))
    frame = _project_frame(text)
    if frame:
        return Pointers(None, None, frame[0], frame[1])
    return Pointers()


def evidence_lines(output: str) -> tuple[list[tuple[str, str]], bool]:
    """The lines of a failing output that are its evidence, each as printed and normalised, and
    whether they are its failure lines (deduplicated by their normalised form, in order) rather
    than its last lines (an output with none)."""
    checkpoint(len(output))
    text = payload(strip_controls(output)) + "\n"
    picked = _failure_lines(text)
    return (picked, True) if picked else (_last_lines(text), False)


def _failure_lines(text: str) -> list[tuple[str, str]]:
    picked: list[tuple[str, str]] = []
    seen: set[str] = set()
    for start in marked_lines(EVIDENCE_MARKERS, text):
        end = text.find("\n", start)
        raw = text[start : end if end != -1 else len(text)][:LINE_CHARS].rstrip()
        norm = normalised_or_none(raw)
        if norm is None or noise_line(raw):
            continue
        if norm not in seen:
            seen.add(norm)
            picked.append((raw, norm))
            if len(picked) >= _MAX_EVIDENCE_LINES:
                break
    return picked


def _last_lines(text: str) -> list[tuple[str, str]]:
    picked: list[tuple[str, str]] = []
    for line in text.split("\n")[-_TAIL_LINES:]:
        raw = line[:LINE_CHARS].rstrip()
        norm = normalised_or_none(raw)
        if norm is not None and not noise_line(line):
            picked.append((raw, norm))
    return picked


def line_digest(norm: str) -> str:
    """A short digest of one normalised line (what an ambient set holds: `state.ambient`)."""
    return hashlib.blake2b(norm.encode("utf-8", "replace"), digest_size=8).hexdigest()


def _own(picked: list[tuple[str, str]], ambient: frozenset[str]) -> list[tuple[str, str]]:
    return [(raw, norm) for raw, norm in picked if line_digest(norm) not in ambient]


def evidence(output: str, ambient: frozenset[str] = frozenset()) -> Evidence:
    """The signature and snippet of one failing result.

    The evidence is `evidence_lines`, less the lines in `ambient` (digests of lines the
    conversation's other commands print too, whatever they do). When every failure line is
    ambient, the output's own last lines are its evidence instead (what this run printed beyond
    what every run prints); when nothing is left at all, the lines as they were.
    The snippet quotes the same lines as printed.
    """
    picked, marked = evidence_lines(output)
    if ambient and (own := _own(picked, ambient)) != picked:
        if not own and marked:
            own, marked = _own(_last_lines(payload(strip_controls(output)) + "\n"), ambient), False
        picked = own or picked
    if marked:
        basis = "\n".join(norm for _, norm in picked)
        quoted = picked
    else:
        basis = "\n".join(norm for _, norm in picked)[-4000:]
        quoted = picked[-12:]
    digest = hashlib.sha256(basis.encode("utf-8", "replace")).hexdigest()
    snippet = "\n".join(raw for raw, _ in quoted)
    if len(snippet) > SNIPPET_CHARS:
        snippet = snippet[: SNIPPET_CHARS - 3] + "..."
    return Evidence(signature=digest, snippet=snippet)
