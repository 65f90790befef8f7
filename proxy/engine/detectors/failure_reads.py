"""What there is to read about the live failure, and what to change once it is all read: the
next step `stuck_same_diagnostic` names (and holds a one-shell re-ask to).

The evidence, in order: the failing test, the line where it fails, the code the test exercises
(by the runner's naming convention, `reading.under_test`); each path as the agent wrote the files
it read or edited since the failure appeared.
"""

from __future__ import annotations

from proxy.engine.detectors.wording import resolve_path, working_dir
from proxy.engine.reading.under_test import code_under_test
from proxy.engine.reading.vocabulary import Call, Vocabulary
from proxy.engine.state.failure import RepairState

__all__ = ["edit_target", "evidence_to_read", "next_read", "resolved"]


def evidence_to_read(state: RepairState) -> list[tuple[str, int | None, str]]:
    """What there is to read about the live failure, in order: the failing test, the line where it
    fails, the code the test exercises."""
    p = state.pointers
    options: list[tuple[str, int | None, str]] = []
    if p.test_file:
        line = p.source_line if p.source_file == p.test_file else None
        options.append((p.test_file, line, f"the failing test {p.test_id}" if p.test_id else "the failing test"))
    if p.source_file and p.source_file != p.test_file:
        where = f"line {p.source_line} where it fails" if p.source_line else "where it fails"
        options.append((p.source_file, p.source_line, where))
    tested = code_under_test(p.test_file) if p.test_file else None
    if tested and tested != p.source_file:
        options.append((tested, None, "the code the failing test exercises"))
    return options


def resolved(state: RepairState, path: str) -> str:
    """`path` as the agent wrote the files it read or edited since the failure appeared."""
    known = [*state.read_since_failure, *state.edited_since_failure]
    return resolve_path(path, known, working_dir(state.failing_command))


def next_read(state: RepairState, vocabulary: Vocabulary | None) -> tuple[str, Call | None] | None:
    """(what to read and why, the exact call) for the first piece of evidence not read since the
    failure appeared; None when all of it has been read."""
    options = evidence_to_read(state)
    if not options:
        return "the failing check's source and the code it exercises", None
    unread = [o for o in options if resolved(state, o[0]) not in state.read_since_failure]
    if not unread:
        return None
    path, line, why = unread[0]
    full = resolved(state, path)
    return f"{why} in {full}", vocabulary.read(full, line) if vocabulary is not None else None


def edit_target(state: RepairState) -> str | None:
    """The code file a change is asked for in, once everything the failure points at is read."""
    code = [path for path, _line, _why in evidence_to_read(state) if path != state.pointers.test_file]
    return resolved(state, code[-1]) if code else None
