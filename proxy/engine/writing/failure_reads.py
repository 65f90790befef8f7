"""What there is to read about the live failure, and what to change once it is all read: the
next step `stuck_same_diagnostic` names, and the finish and action gates ask for when nothing ran
since the failure that could change it (`next_step`), each re-ask held to that step's exact call
where it has one (`next_call`).

The evidence, in order: the failing test, the line where it fails, the code the test exercises
(by the runner's naming convention, `reading.under_test`), and once a change to that code left the
failure as it was, the function it calls that its file imports from another module (`callee`:
recovery bench, temps, where the fault is in `units.py` and the model edited `report.py` again and
again); each path as the agent wrote the files it read or edited since the failure appeared.

All of it is found once per request (`step_of`: one `Step` record) and every question below reads
that record: what to read next, the file and lines to change, the kind and tool of the step, its
exact call.
"""

from __future__ import annotations

from dataclasses import dataclass

from proxy.engine.outputs.evidence import in_library
from proxy.engine.outputs.excerpt import excerpt, file_text
from proxy.engine.reading.under_test import code_under_test
from proxy.engine.reading.workspace import same_file
from proxy.engine.state.failure import RepairState
from proxy.engine.writing.imports import imported_callees, imports
from proxy.engine.writing.pointed import changeable, tried_lines
from proxy.engine.writing.vocabulary import Call, Vocabulary
from proxy.engine.writing.wording import (
    BEHAVIOUR,
    expected_behaviour,
    failing_call,
    lines_to_pick,
    one_of_them,
    resolve_path,
    working_dir,
)
from proxy.settings.kinds import CallKind

__all__ = [
    "Step",
    "callee",
    "evidence_to_read",
    "expected",
    "lines_in",
    "next_call",
    "next_kind",
    "next_read",
    "next_step",
    "quoted_failure",
    "resolved",
    "step_of",
    "step_tool",
    "tested_code",
]


def evidence_to_read(state: RepairState) -> list[tuple[str, int | None, str]]:
    """What there is to read about the live failure, in order: the failing test, the line where it
    fails, the code the test exercises."""
    p = state.pointers
    # A failure reported in the interpreter's or a library's file is no failure located: the test
    # is what there is to read of it (issue 51: a view of `importlib/__init__.py` lines 111-141).
    source = p.source_file if p.source_file and not in_library(p.source_file) else None
    options: list[tuple[str, int | None, str]] = []
    elsewhere = bool(source) and source != p.test_file
    # No test ran and the failure is in another file (a test module that did not import: pytest's
    # collection error, a SyntaxError in the code it imports): the test only imports what broke.
    if p.test_file and (p.test_id is not None or not elsewhere):
        line = p.source_line if source == p.test_file else None
        options.append((p.test_file, line, f"the failing test {p.test_id}" if p.test_id else "the failing test"))
    if source and elsewhere:
        where = f"line {p.source_line} where it fails" if p.source_line else "where it fails"
        options.append((source, p.source_line, where))
    tested = tested_code(state, p.test_file) if p.test_file else None
    if tested and not same_file(tested, source or ""):
        options.append((tested, None, "the code the failing test exercises"))
    if (deeper := callee(state)) is not None:
        options.append((deeper[0], None, f"`{deeper[1]}`, which the failing code calls,"))
    # Never the interpreter's or a library's file (the code under test or a callee resolved there either).
    return [option for option in options if not in_library(option[0])]


def callee(state: RepairState) -> tuple[str, str] | None:
    """(its file, its name) of the first function the failing code calls that the code's file
    imports from another module, once an edit of that file left the failure as it was: the
    fault may be one call deeper. None before such an edit, or while the code is not read."""
    p = state.pointers
    tested = tested_code(state, p.test_file) if p.test_file else None
    code = tested or (p.source_file if p.source_file != p.test_file else None)
    if code is None or not state.edits_on_failure:
        return None
    full = resolved(state, code)
    shown = state.shown(full)
    if shown is None or not any(same_file(e, full) for e in state.edited_since_failure):
        return None
    function = excerpt(shown, state.called)
    found = imported_callees(function, file_text(shown), full) if function is not None else ()
    return (found[0][1], found[0][0]) if found else None


def tested_code(state: RepairState, test_file: str) -> str | None:
    """The code a test file tests (its runner's naming convention), as the agent wrote its path,
    where the transcript shows that file exists: read, edited or named by the live failure, or
    imported by the test as the agent last read it (Go's tests share their package: beside the
    test, always). A name made from the test's alone is not said: `tests/test_ext_autodoc.py`
    tests `sphinx/ext/autodoc/__init__.py`, and "read ext_autodoc.py" sent an agent to a file
    that is not there (corpus, sphinx-8035 r44)."""
    guess = code_under_test(test_file)
    if guess is None:
        return None
    seen = (k for k, _ in state.seen)
    known = (*state.edited_since_failure, *state.read_since_failure, *seen, state.pointers.source_file or "")
    found = next((k for k in known if k and same_file(k, guess)), None)
    if found is not None:
        return found
    test = state.shown(test_file)
    return guess if test_file.endswith("_test.go") or (test is not None and imports(file_text(test), guess)) else None


def resolved(state: RepairState, path: str) -> str:
    """`path` as the agent wrote the files it read or edited since the failure appeared."""
    known = [*state.read_since_failure, *state.edited_since_failure]
    return resolve_path(path, known, working_dir(state.failing_command))


@dataclass(frozen=True, slots=True)
class Step:
    """What the live failure asks for next, found once from a `RepairState` (`step_of`): a remedy,
    its re-ask and its pinned call all read this one record, so one request finds the evidence,
    the file to change and its lines once however many of them it asks for."""

    state: RepairState
    known: bool
    """The failure points at something to read (`evidence_to_read` is not empty)."""
    unread: tuple[str, int | None, str] | None
    """The first piece of that evidence not read since the failure appeared: (the path as the
    failure names it, its line, why); None once all of it is read."""
    target: str | None
    """The code file a change is asked for in: the last code file of the evidence."""
    shown: str | None
    """That file as the agent last saw it, when it has not changed since (`RepairState.shown`)."""
    lines: str | None
    """The function to change as the agent last saw it: the one the failure calls, else the one
    holding the line it points at; None while a read is due or where the lines were not seen."""
    pointed: tuple[str, ...]
    """Of `lines`, those a held edit may change one of (`pointed.changeable`): a copy of them all
    is no answer to give (issue 51)."""
    tried: tuple[str, ...] = ()
    """Lines the failure was seen with (`pointed.tried_lines`): no replacement a held edit offers."""

    @property
    def reading(self) -> bool:
        """A read is due: something the failure points at is unread, or nothing is known yet."""
        return not self.known or self.unread is not None


def step_of(state: RepairState) -> Step:
    """The next step of `state`'s live failure (see `Step`)."""
    options = evidence_to_read(state)
    unread = next((o for o in options if resolved(state, o[0]) not in state.read_since_failure), None)
    code = [path for path, _line, _why in options if path != state.pointers.test_file]
    target = resolved(state, code[-1]) if code else None
    shown = state.shown(target) if target is not None else None
    lines = None if not options or unread is not None or shown is None else _lines(state, shown)
    pointed = changeable(lines, file_text(shown)) if lines is not None and shown is not None else ()
    tried = tried_lines(state.tried, pointed) if pointed else ()
    return Step(state, bool(options), unread, target, shown, lines, pointed, tried)


def _lines(state: RepairState, shown: str) -> str | None:
    """`Step.lines`, once everything is read: the function in the file to change, as last shown."""
    p = state.pointers
    line = p.source_line if p.source_file and state.shown(p.source_file) is shown else None
    deeper = callee(state)
    return excerpt(shown, (*state.called, deeper[1]) if deeper is not None else state.called, line)


def next_read(step: Step, vocabulary: Vocabulary | None) -> tuple[str, Call | None] | None:
    """(what to read and why, the exact call) for the first piece of evidence not read since the
    failure appeared; None when all of it has been read."""
    if not step.known:
        return "the failing check's source and the code it exercises", None
    if step.unread is None:
        return None
    path, line, why = step.unread
    full = resolved(step.state, path)
    return f"{why} in {full}", vocabulary.read(full, line) if vocabulary is not None else None


def lines_in(state: RepairState, path: str) -> str | None:
    """`Step.lines` where `path` names the file they are in; None elsewhere."""
    step = step_of(state)
    return step.lines if step.target is not None and same_file(step.target, path) else None


def quoted_failure(step: Step) -> str | None:
    """The failing output to quote beside `next_step`; None when the step quotes the code to
    replace: then the failing output is left out, or a small model copies the test's own line as
    the code to replace (seen on Qwen2.5-Coder-1.5B); `expected` says what it shows instead."""
    return None if step.lines is not None else step.state.snippet


def expected(step: Step) -> str:
    """What the failure expects against what the code gives, once the lines to change are known
    (`wording.expected_behaviour`): a held edit asks for the behaviour, not the green (issue 61)."""
    return expected_behaviour(step.state, step.lines) if step.lines is not None else ""


def next_step(step: Step, vocabulary: Vocabulary | None, stated: bool = True, *, hold: bool = True) -> str:
    """Instead of the failing check again: read what the failure points at and has not been read,
    else make a different change that does what is expected (`expected`, said first unless `stated`
    is False: a caller that quotes it); without `hold`, no "do not edit again" before a read."""
    state = step.state
    edited = ", ".join(dict.fromkeys(p.rsplit("/", 1)[-1] for p in state.edited_since_failure))
    read = next_read(step, vocabulary)
    if read is None:
        # Everything the failure points at is read: a change not tried yet, that does what is expected.
        target = step.target
        where = target or "the code"
        change = f"a different change to {edited} than before" if edited else f"a change to {where}"
        said = f"{expected(step)} " if stated and expected(step) else ""
        if target is not None and step.shown is None and vocabulary is not None:
            look = vocabulary.read(target)  # found by a search, or changed since: look before changing it
            if look is not None:
                return (
                    f"Make {change}, one that makes the code do what is expected. First look at {target} "
                    f"as it is now: {look.render()}. Reply with that tool call only."
                )
        lines, pointed = step.lines, step.pointed
        one = vocabulary.change_one(where, pointed, step.tried) if vocabulary is not None else None
        edit = vocabulary.edit(where, lines) if vocabulary is not None and lines is not None else None
        if one is not None and vocabulary is not None:
            how = f": {lines_to_pick(where, pointed)} {one.render()}, {one_of_them(vocabulary)}"
        elif edit is not None and vocabulary is not None:
            how = f": {edit.render()}, with {vocabulary.new_arg} those lines changed {BEHAVIOUR}"
        elif lines is not None:
            how = f", one that makes the code do what is expected. The code as you last saw it:\n{lines}\n"
        else:
            how = ", one that makes the code do what is expected"
        read_all = "the failing test and the code it exercises" if target is not None else "the failing test"
        return f"You have read {read_all}. {said}Make {change}{how}. Then re-run {failing_call(state)}."
    what, call = read
    held = f"Do not edit {edited} again yet." if hold and edited else ""  # none edited: no fix to hold back
    # Measured (bench/efficacy.py): naming the exact call and asking for that call alone
    # changed the next action far more often than advice or a bare JSON object did.
    ask = f"Next, read {what}: {call.render()}. Reply with that tool call only." if call else f"Next, read {what}."
    return f"{held} {ask}".lstrip()


def next_kind(step: Step) -> CallKind:
    """The kind of the next step: a read while something the failure points at is unread, or
    while the file to change was changed since it was seen (`next_step` asks for a look first),
    else an edit."""
    if step.reading:
        return CallKind.READ
    return CallKind.READ if step.target is not None and step.shown is None else CallKind.EDIT


def step_tool(step: Step, vocabulary: Vocabulary | None, failing: str) -> str | None:
    """The tool of the next step (a read, else the change), unless it is the failing check's
    own tool (one shell for everything)."""
    if vocabulary is None:
        return None
    tool = vocabulary.reader if next_kind(step) is CallKind.READ else vocabulary.editor
    return tool.name if tool is not None and tool.name != failing else None


def next_call(step: Step, vocabulary: Vocabulary | None, failing: str) -> Call | None:
    """The next step's exact call, that a re-ask is held to: the next read's, or once all is read,
    the change. Asked in words, the model proposed the failing run again every time (recovery
    bench, one shell for everything); narrowed to the editor alone, it sent a text to replace that
    the file had before the agent's last edit, twice (recovery bench, bank, OpenHands style). The
    change is an in-place edit of the file through the one shell, or the editor's call with the
    lines the failure calls as its text to replace (the model writes only their replacement,
    held to keep their definitions: `kept`); where the proxy has not seen the file as it is, a
    look at it (not through the one shell: none there). None when the step is not the failing
    check's tool's nor the step tool's."""
    if vocabulary is None:
        return None
    tool = step_tool(step, vocabulary, failing)
    read = next_read(step, vocabulary)
    target, lines = step.target, step.lines
    call: Call | None = None
    if read is not None:
        call = read[1]
    elif target is not None and step.shown is not None:  # a file the proxy saw, as it is
        one = vocabulary.change_one(target, step.pointed, step.tried) if tool is not None else None
        if tool is None:
            call = vocabulary.shell_edit(target, lines)
        elif one is not None:
            call = one  # one of the lines the failure points at, changed (issue 51)
        elif lines is not None:
            call = vocabulary.edit(target, lines, held=True)
    elif target is not None and tool is not None:
        # Changed since the proxy saw it: the look `next_step` asks for first (asked in words, the
        # model wrote the editor's `str_replace` with the view's range: recovery bench, vowels).
        # Not through the one shell, where the file may be one its `cat` could not show.
        call = vocabulary.read(target)
    return call if call is not None and call.name == (tool or failing) else None
