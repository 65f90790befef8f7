"""The lines an edit meant: for a refused edit whose text to replace is not in the file, what the
re-ask should carry instead, made of what the proxy has seen (shared by the patterns that refuse
edits: `repeat_failed_call`, `pointless_call`; `held_edit` by `redone_edit`, `unmatched_edit`).

    the file read since it last changed  -> the lines of it the text was meant to match, whole,
                                            in the agent's edit call (pinned: the re-ask's schema
                                            holds path and text to replace to them)
    not read since it changed            -> the read of that file (pinned: the re-ask can only be
                                            that read): only a look shows the lines
    a test file, read, with nothing like -> the same, in the code it tests (`tests/test_calc.py`:
    the text in it                          `calc.py`): a small model sent the code's lines as an
                                            edit of the test (recovery bench, calc and temps);
                                            where the proxy never saw that file, only a look at
                                            it, by the test's name (asked in words, the model
                                            sent the same edit of the test three times: c9,
                                            calc seed 1)
"""

from __future__ import annotations

from proxy.engine.outputs.excerpt import closest_span, excerpt, file_text
from proxy.engine.reading.proposal import Proposal
from proxy.engine.reading.under_test import code_under_test
from proxy.engine.reading.workspace import same_file
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.failure_reads import lines_in, step_of, tested_code
from proxy.engine.writing.pointed import changeable, tried_lines
from proxy.engine.writing.vocabulary import Call
from proxy.engine.writing.wording import BEHAVIOUR, expected_behaviour, lines_to_pick, one_of_them

__all__ = ["held_change", "held_edit", "held_in_place", "kept", "meant"]


def meant(proposal: Proposal, context: RemedyContext) -> tuple[str, Call | None] | None:
    """What to ask for instead of an edit whose text to replace is not in the file: (the words,
    the call pinned); None when it is no such edit, or the lines are in the file as sent."""
    replaced = proposal.replaced()
    path = next((w.path for w in proposal.writes), None)
    if replaced is None or path is None:
        return None
    shown = context.repair.shown(path)
    if shown is None:
        return _look(path, context)
    found = _meant(proposal.name, path, shown, replaced, context)
    if found is not None or closest_span(shown, replaced[1]) is not None:
        return found
    code = tested_code(context.repair, path)
    if code is None:  # the code file only a guess from the test's name: a look at it, never lines
        guess = code_under_test(path)
        look = _look(guess, context) if guess is not None else None
        if look is None:
            return None
        return f"That text is not in {path}, a test: the code it tests is likely {guess}. {look[0]}", look[1]
    in_code = context.repair.shown(code)
    lines = _meant(proposal.name, code, in_code, replaced, context) if in_code is not None else _look(code, context)
    if lines is None:
        return None
    return f"That text is not in {path}, a test: the code it tests is {code}. {lines[0]}", lines[1]


def kept(proposal: Proposal, context: RemedyContext) -> tuple[str, Call] | None:
    """What to ask for instead of an edit that changes nothing though its text to replace is in
    the file as the agent last read it: that text kept, held by the schema (the function the
    failure calls, whole, where the refused text holds it), what replaces it the model's to
    write. Asked to look at the file again, Qwen2.5-Coder-1.5B viewed it and sent the same
    whole-file edit, turn after turn (recovery bench, stack). None when it is no such edit."""
    replaced = proposal.replaced()
    path = next((w.path for w in proposal.writes), None)
    vocabulary = context.vocabulary
    if replaced is None or path is None or vocabulary is None:
        return None
    shown = context.repair.shown(path)
    if shown is None or not replaced[1].strip():
        return None
    if replaced[1] not in file_text(shown):
        return None
    called = excerpt(shown, context.repair.called)
    lines = called if called is not None and called in replaced[1] else replaced[1]
    live = context.repair.live
    goal, goal_all = (BEHAVIOUR, f"changed {BEHAVIOUR}") if live else ("as it should be", "as they should be")
    expected = expected_behaviour(context.repair, lines)
    stated = f"{expected} " if expected else ""
    picks = changeable(lines, file_text(shown))
    one = vocabulary.change_one(path, picks, tried_lines(context.repair.tried, picks))
    if one is not None and one.name == proposal.name:
        # One of its lines, held to change: the re-ask held to the same text, "what replaces it
        # must differ", got the same copy back, and the stop rung handed the run back (issue 51).
        text = f"{stated}{lines_to_pick(path, picks, 'it replaced')} {one.render()}, {one_of_them(vocabulary, goal)}."
        return text, one
    call = vocabulary.edit(path, lines)
    if call is None or call.name != proposal.name:
        return None
    return (
        f"{stated}Its text to replace is in {path}; what replaces it must differ: {call.render()}, "
        f"with {vocabulary.new_arg} those lines {goal_all}.",
        call,
    )


def held_edit(path: str, refused: str, context: RemedyContext) -> Call | None:
    """With one shell for everything, the re-ask of a refused edit held to an in-place edit of
    `path` (what it changes is the model's to write); None where the agent has another editor,
    or the refused call was not the shell's. Its text to replace is held to the lines to change
    where `path` is their file (`failure_reads.lines_in`)."""
    vocabulary = context.vocabulary
    call = vocabulary.shell_edit(path, lines_in(context.repair, path)) if vocabulary is not None else None
    return call if call is not None and call.name == refused else None


def held_change(path: str, tool: str, context: RemedyContext) -> tuple[str, Call] | None:
    """With an editor, the re-ask of a refused edit of `path` held to the file as it is now: one
    of the lines the live failure points at, as the agent last saw them, to change (where `path`
    is their file: `failure_reads.Step`), else a look at the file where it changed since it was
    seen (its lines are what the next edit needs); None otherwise. Asked in words after a refused
    redone edit, the model's right change came back "old_str not found" twice: it wrote the text
    to replace from memory, not from the file as it now is (issue 61)."""
    vocabulary = context.vocabulary
    if vocabulary is None:
        return None
    step = step_of(context.repair)
    if step.target is not None and same_file(step.target, path) and step.pointed and step.shown is not None:
        one = vocabulary.change_one(step.target, step.pointed, step.tried)
        if one is not None and one.name == tool:
            return f"{lines_to_pick(step.target, step.pointed)} {one.render()}, {one_of_them(vocabulary)}.", one
    if context.repair.shown(path) is None:
        look = _look(path, context)
        return (look[0], look[1]) if look is not None and look[1] is not None else None
    return None


def held_in_place(proposal: Proposal, context: RemedyContext) -> Call | None:
    """With one shell for everything, the re-ask of a refused edit of a file held to an in-place
    edit of it, or, where it is a test whose code the proxy saw, of that code; None otherwise."""
    path = next((w.path for w in proposal.writes), None)
    if path is None:
        return None
    target = tested_code(context.repair, path) if code_under_test(path) is not None else path
    return held_edit(target, proposal.name, context) if target is not None else None


def _look(path: str, context: RemedyContext) -> tuple[str, Call | None] | None:
    """For an edit of a file not read since it last changed: the read of it, whole (pinned: the
    re-ask can only be that read). Its lines are what the next edit needs, and only a look shows
    them; asked in words, the model sent the same not-found text again (recovery bench, calc)."""
    call = context.vocabulary.read(path) if context.vocabulary is not None else None
    if call is None:
        return None
    return f"Look at {path} as it is now first: {call.render()}. Reply with that tool call only.", call


def _meant(
    tool: str, path: str, shown: str, replaced: tuple[str, str], context: RemedyContext
) -> tuple[str, Call | None] | None:
    """The lines of the file the edit's text to replace (`replaced`: its argument and text) was
    meant to match, whole, as the agent's last read showed them, with the call that uses them
    (pinned: the re-ask holds its path and text to replace to these); None when no lines are
    alike enough, or they are the text as sent."""
    argument, attempted = replaced
    span = closest_span(shown, attempted)
    if span is None or span == attempted:
        return None
    vocabulary = context.vocabulary
    picks = changeable(span, file_text(shown))
    tried = tried_lines(context.repair.tried, picks)
    one = vocabulary.change_one(path, picks, tried) if vocabulary is not None else None
    live = context.repair.live
    goal, goal_all = (BEHAVIOUR, f"changed {BEHAVIOUR}") if live else ("as it should be", "as they should be")
    stated = f"{expected} " if (expected := expected_behaviour(context.repair, span)) else ""
    if one is not None and vocabulary is not None and one.name == tool:
        # One of those lines, held to change: held to them whole, this model wrote them back as
        # the new text (6 and 7 of 8 re-asks at the stack and temps stuck points, `pin_order.py`).
        picked = lines_to_pick(path, picks, "it was meant to match")
        return f"{stated}{picked} {one.render()}, {one_of_them(vocabulary, goal)}.", one
    call = vocabulary.edit(path, span) if vocabulary is not None else None
    if call is not None and vocabulary is not None and call.name == tool:
        text = (
            f"{stated}The lines it was meant to match, exactly as the file has them: {call.render()}, "
            f"with {vocabulary.new_arg} those lines {goal_all}."
        )
        return text, call
    return (
        f"The lines of {path} it was meant to match, exactly as the file has them, to use as `{argument}`:\n{span}",
        None,
    )
