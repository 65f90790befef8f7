"""Evidence extraction: what a next step can name, pulled from a failing output.

For pytest, unittest, jest/vitest, go test, cargo test, tsc, mypy, ruff/flake8 and Python
tracebacks: the failing test (id and file) and the source file and line of the failure.
Nothing is invented: a field the output does not state stays None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Pointers", "extract_pointers"]

_LIBRARY = re.compile(r"(?:site-packages|dist-packages|/lib/python\d|<frozen |node_modules|/rustc/|/usr/lib/go)")


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
_UNITTEST = re.compile(r"^(?:FAIL|ERROR): (?P<test>\w+) \((?P<where>[\w.]+)\)", re.MULTILINE)
_PY_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)', re.MULTILINE)
_JEST_FILE = re.compile(r"^\s*FAIL\s+(?P<file>\S+\.(?:[jt]sx?|mjs|cjs))", re.MULTILINE)
_JEST_TITLE = re.compile(r"^\s*●\s+(?P<title>.+?)\s*$", re.MULTILINE)
_JEST_AT = re.compile(r"\((?P<file>[^\s()]+\.(?:[jt]sx?|mjs|cjs)):(?P<line>\d+):\d+\)")
_VITEST = re.compile(r"^\s*FAIL\s+(?P<file>\S+\.(?:[jt]sx?|mjs|cjs)) > (?P<title>.+?)\s*$", re.MULTILINE)
_VITEST_AT = re.compile(r"^\s*❯ (?P<file>\S+\.(?:[jt]sx?|mjs|cjs)):(?P<line>\d+):\d+", re.MULTILINE)
_GO_FAIL = re.compile(r"^\s*--- FAIL: (?P<test>\S+)", re.MULTILINE)
_GO_AT = re.compile(r"^\s+(?P<file>\S+_test\.go):(?P<line>\d+): ", re.MULTILINE)
_CARGO_TEST = re.compile(r"^---- (?P<test>\S+) stdout ----", re.MULTILINE)
_RUST_PANIC = re.compile(r"panicked at (?P<file>[^\s:]+\.rs):(?P<line>\d+):\d+")
_RUST_ERROR_AT = re.compile(r"^\s*--> (?P<file>[^\s:]+\.rs):(?P<line>\d+):\d+", re.MULTILINE)
_TSC = re.compile(r"^(?P<file>[^\s(]+\.tsx?)\((?P<line>\d+),\d+\): error TS\d+", re.MULTILINE)
_MYPY = re.compile(r"^(?P<file>[^\s:]+\.pyi?):(?P<line>\d+): error: ", re.MULTILINE)
_RUFF = re.compile(r"^(?P<file>[^\s:]+\.\w+):(?P<line>\d+):\d+: [A-Z]+\d+ ", re.MULTILINE)


def _project_frame(text: str) -> tuple[str, int] | None:
    frames = [(m["file"], int(m["line"])) for m in _PY_FRAME.finditer(text) if not _LIBRARY.search(m["file"])]
    return frames[-1] if frames else None


def extract_pointers(output: str) -> Pointers:
    """The failing test and failure location an output states, if it states them."""
    text = output.replace("\r\n", "\n")
    if m := _PYTEST_ID.search(text):
        locations = [(x["file"], int(x["line"])) for x in _PYTEST_LOCATION.finditer(text)]
        source = next((loc for loc in reversed(locations) if loc[0] != m["file"]), None)
        frame = source or (locations[-1] if locations else None)
        return Pointers(f"{m['file']}::{m['test']}", m["file"], *(frame or (None, None)))
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
