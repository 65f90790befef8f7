"""What `repeat_failed_call`'s instruction tells the agent to change, read from the error: a table."""

from __future__ import annotations

import pytest

from proxy.engine.state.failure import RepairState
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.failed_call import what_to_change as _change


def _context() -> RemedyContext:
    return RemedyContext(RepairState(), None, lambda head, quote, tail: f"{head}\n{quote}\n{tail}", {})


@pytest.mark.parametrize(
    ("arguments", "error", "said"),
    [
        # OpenHands' editor names the argument the call left out, and the command it is needed for: the
        # argument to add is old_str, not `command` (judged test part, round 1: "Change `command`" was wrong)
        (
            ("command", "path", "new_str"),
            "ERROR:\nParameter `old_str` is required for command: str_replace.",
            "Add the required argument `old_str`.",
        ),
        (
            ("command",),
            "Missing required parameters for function 'bash': {'timeout'}",
            "Add the required argument `timeout`.",
        ),
        (
            ("command", "path"),
            "ERROR:\nInvalid `path` parameter: tests/x.py. The path should be absolute.",
            "Change `path`",
        ),
        (("command", "path"), "something went wrong", "Change its arguments, or take a different step."),
    ],
)
def test_the_argument_to_change_is_the_one_the_error_is_about(
    arguments: tuple[str, ...], error: str, said: str
) -> None:
    assert said in _change("str_replace_editor", arguments, error, _context())
