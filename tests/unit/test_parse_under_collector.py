"""The two places the proxy parses Python (the files an inline program writes; smolagents'
`Calling tools:` list) when the interpreter breaks the parse from inside: CPython 3.11 counts
the tree builder's depth per interpreter, and a parse run inside another (here a collector
callback; in a server, a finalizer that formats a traceback, which parses its source line)
leaves the outer one a `SystemError` (gh-106905). Either answer is the right one or "cannot
tell"; never an error that drops the request's analysis."""

from __future__ import annotations

import ast
import gc
from collections.abc import Callable
from typing import TypeVar

from proxy.engine.reading.pywrites import python_writes
from proxy.engine.text.textcalls import written_calls

T = TypeVar("T")
PROGRAM = "open('a.py', 'w').write('')\n" + "x = [1, 2, 3]\n" * 400
CALLS = (
    "Calling tools:\n["
    + ", ".join(
        ["{'id': 'c1', 'type': 'function', 'function': {'name': 'python_interpreter', 'arguments': 'print(1)'}}"] * 40
    )
    + "]"
)


def _disturbed(call: Callable[[], T]) -> T:
    """`call()` with a collection at every allocation, each starting with a parse of its own
    (the interpreter as it was is back before anything is raised or compared)."""

    def nested(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            ast.parse("a + b")

    threshold = gc.get_threshold()
    gc.callbacks.append(nested)
    gc.set_threshold(1)
    try:
        return call()
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(nested)


def test_the_disturbance_breaks_a_parse_on_this_interpreter_or_it_is_fixed() -> None:
    """What the two below stand against: on 3.11.7 the outer parse raises."""
    try:
        _disturbed(lambda: ast.parse(PROGRAM))
    except SystemError as exc:
        assert "recursion depth mismatch" in str(exc)


def test_the_files_a_program_writes_are_told_or_not_told_never_an_error() -> None:
    assert _disturbed(lambda: python_writes(PROGRAM)) in ((("a.py", True),), ())


def test_a_written_call_list_is_read_or_not_read_never_an_error() -> None:
    names = [c.name for c in _disturbed(lambda: written_calls(CALLS))]
    assert names in ([], ["python_interpreter"] * 40)


def test_without_the_collector_both_are_read() -> None:
    """The same inputs, parsed undisturbed: the answers the fixture may turn into "cannot tell"."""
    assert python_writes(PROGRAM) == (("a.py", True),)
    assert [c.name for c in written_calls(CALLS)] == ["python_interpreter"] * 40
