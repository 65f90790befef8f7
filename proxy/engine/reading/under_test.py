"""The file a test file tests, by its test runner's naming convention: what a failing test
exercises, when its traceback does not say."""

from __future__ import annotations

import re

__all__ = ["code_under_test"]

_UNDER_TEST = (
    (re.compile(r"^test_(.+\.py)$"), r"\1"),
    (re.compile(r"^(.+)_test\.py$"), r"\1.py"),
    (re.compile(r"^(.+)_test\.go$"), r"\1.go"),
    (re.compile(r"^(.+)\.(?:test|spec)\.([jt]sx?|mjs|cjs)$"), r"\1.\2"),
)
_TEST_DIRS = frozenset({"tests", "test", "__tests__", "spec", "specs"})


def code_under_test(test_file: str) -> str | None:
    """The file a test file tests, by its runner's naming convention (pytest's `test_X.py` or
    `X_test.py`, Go's `X_test.go`, jest's `X.test.ts`), beside it or above a tests folder."""
    folder, _, name = test_file.rpartition("/")
    for pattern, target in _UNDER_TEST:
        if match := pattern.match(name):
            parent, _, last = folder.rpartition("/")
            base = parent if last in _TEST_DIRS else folder
            return f"{base}/{match.expand(target)}" if base else match.expand(target)
    return None
