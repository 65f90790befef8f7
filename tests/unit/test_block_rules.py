"""The block rung, pattern by pattern: what a reply may not propose in a given state, and the
near misses it must pass. Each case is a transcript and a proposed call; the decision's reply
rules judge it as the reply stage would."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from chat import OPENHANDS_TOOLS, Chat, bash, edit, test_run, view
from scenario_loader import acting, analyse
from scenario_loader import engine as engine_of

from proxy.engine.detectors import REGISTRY
from proxy.engine.plan.reply import Gate, ReplyView, judge
from proxy.engine.writing.sed_script import SED_SCRIPT, held_script
from proxy.engine.writing.unlike import unlike
from proxy.engine.writing.vocabulary import OneOf, Shaped

ACTING = acting(*(p.name for p in REGISTRY))
"""Every pattern acting: this file is the rung's refusals pattern by pattern, as each refuses
when it acts (most ship in shadow, where they refuse nothing: `test_shadow_gates.py`)."""


def engine() -> Any:
    return engine_of(ACTING)


RUN = ("execute_bash", {"command": "cd /workspace && python -m pytest tests/test_parse.py"})
NOT_FOUND = (
    "ERROR:\nNo replacement was performed, old_str `return a - b` did not appear verbatim in /workspace/src/parse.py."
)
TWICE = "ERROR:\nNo replacement was performed, old_str `return a - b` appears 2 times in /workspace/src/parse.py."
"""The recovery bench's editor (test part, trim seed 4 at 808b083): the same `old_str` came back with three replacements."""
SAME_TEXTS = "ERROR:\nNo replacement was performed. `new_str` and `old_str` must be different."
BAD_EDIT = ("str_replace_editor", {"command": "str_replace", "path": "/workspace/src/parse.py", "old_str": "return a - b", "new_str": "return a + b"})  # fmt: skip
VIEW = ("str_replace_editor", {"command": "view", "path": "/workspace/src/parse.py"})


@dataclass(frozen=True)
class Case:
    name: str
    turns: list[Any]
    proposal: tuple[str, dict[str, Any]]
    refused_by: str | None


def _failed_edit() -> tuple[str, dict[str, Any], str]:
    return (*BAD_EDIT, NOT_FOUND)


def _install() -> tuple[str, dict[str, Any], str]:
    return (
        "execute_bash",
        {"command": "cd /workspace && pip install -e . 2>&1 | tail -2"},
        "Successfully installed parse-0.1",
    )


def _touch() -> tuple[str, dict[str, Any], str]:
    return ("execute_bash", {"command": "cd /workspace && rm -rf .pytest_cache"}, "")


EDIT = edit()[:2]
LINE_EDIT = ("execute_bash", {"command": "edit 3:3\n    return int(a) + int(b)\nend_of_edit"})


def _shown() -> tuple[str, dict[str, Any], str]:
    return view(content="def parse(s):\n    return a + b + 1\n")


def _line_edit() -> tuple[str, dict[str, Any], str]:
    return (*LINE_EDIT, "File updated.")


def _no_op_sed() -> tuple[str, dict[str, Any], str]:
    return ("execute_bash", {"command": "sed -i 's/a + b + 1/a + b + 1/' /workspace/src/parse.py"}, "")


def _half_sed() -> tuple[str, dict[str, Any], str]:
    """A shell edit that failed on one of its files: it may have changed the other."""
    return (
        "execute_bash",
        {"command": "sed -i 's/a + b + 1/a + b/' /workspace/src/parse.py /workspace/src/pars.py"},
        "sed: can't read /workspace/src/pars.py: No such file or directory\n[Command finished with exit code 2]",
    )


def _refused_sed() -> tuple[str, dict[str, Any], str]:
    """A substitution whose replacement spans lines: sed refuses the script before it opens a
    file (recovery bench, bank: sent turn after turn, the test re-run between)."""
    script = "s/return a + b + 1/if a:\n    return a + b/"
    return (
        "execute_bash",
        {"command": f"cd /workspace && sed -i '{script}' src/parse.py"},
        "sed: -e expression #1, char 34: unterminated `s' command\n[Command finished with exit code 1]",
    )


def _uncompiled_sed() -> tuple[str, dict[str, Any], str]:
    """`[::-1]` in the pattern is a bracket expression with a range sed rejects: nothing written
    (recovery bench, stack seed 1, one shell: the test re-run after it passed, as after an edit)."""
    return (
        "execute_bash",
        {"command": "sed -i 's/pop(self)[::-1]/pop(self)/' src/parse.py"},
        "sed: -e expression #1, char 28: Invalid range end\n[Command finished with exit code 1]",
    )


def _line_break_sed(pattern: str) -> tuple[str, dict[str, Any], str]:
    """A substitution whose pattern holds `\\n` (recovery bench, stack seed 1, one shell: three
    times in one run, exit 0, the test re-run after each as after an edit)."""
    return ("execute_bash", {"command": f"sed -i 's/{pattern}/    return a + b/' /workspace/src/parse.py"}, "")


def _inline_write() -> tuple[str, dict[str, Any], str]:
    """Inline Python that rewrites a source file (corpus: mswea1-cam-gpt5-nano/sphinx-doc__sphinx-8035,
    request 20): the proxy cannot see what it wrote."""
    script = "p = 'src/parse.py'\ns = open(p).read()\nopen(p, 'w').write(s.replace('+ 1', ''))\nprint('PATCHED')"
    return ("execute_bash", {"command": f"cd /workspace && python - <<'PY'\n{script}\nPY"}, "PATCHED")


def _anchored_sed(indent: str) -> tuple[str, dict[str, Any], str]:
    """A substitution held to a whole line (recovery bench, leap seed 1: `^return ...$` of an
    indented line matched nothing, exit 0, and the test was run again)."""
    command = f"sed -i 's/^{indent}return int(a) + int(b) + 1$/{indent}return int(a) + int(b)/' /workspace/parse.py"
    return ("execute_bash", {"command": command}, "")


def _cat_parse() -> tuple[str, dict[str, Any], str]:
    return ("execute_bash", {"command": "cat /workspace/parse.py"}, "def parse(s):\n    return int(a) + int(b) + 1\n")


def _git(command: str) -> tuple[str, dict[str, Any], str]:
    """A git command that puts files back (the agent's own change undone, or a stash applied):
    the work tree changed, whatever the proxy can tell of which files."""
    return ("execute_bash", {"command": f"cd /workspace && {command}"}, "")


def _grep() -> tuple[str, dict[str, Any], str]:
    return ("execute_bash", {"command": "grep -rn parse /workspace/src"}, "/workspace/src/parse.py:1:def parse(s):")


CASES = [
    Case("the failing check a fourth time, nothing changed", [test_run()] * 3, RUN, "stuck_same_diagnostic"),
    Case("the failing check again at once, after two failures", [test_run()] * 2, RUN, "stuck_same_diagnostic"),
    Case("the failing check again, only a read since it failed", [test_run(), view()], RUN, "stuck_same_diagnostic"),
    Case("the failing check again after an install read by its tail", [test_run(), _install()], RUN, None),
    Case("the failing check again after one failure and an edit", [test_run(), edit()], RUN, None),
    Case("the failing check again after a command that is no read", [test_run(), _touch()], RUN, None),
    Case("the check run first, nothing failed before", [view()], RUN, None),
    Case(
        "the failing check again, only an edit that changed nothing since",
        [test_run(), _no_op_sed()],
        RUN,
        "stuck_same_diagnostic",
    ),
    Case(
        "the failing check again, only an edit the editor turned down since",
        [test_run(), _failed_edit()],
        RUN,
        "stuck_same_diagnostic",
    ),
    Case("the failing check again after a shell edit that failed on one file", [test_run(), _half_sed()], RUN, None),
    Case(
        "the failing check again, only a sed whose script sed refused since",
        [test_run(), _refused_sed()],
        RUN,
        "stuck_same_diagnostic",
    ),
    Case(
        "the failing check again, only a substitution whose pattern sed could not compile since",
        [test_run(), _uncompiled_sed()],
        RUN,
        "stuck_same_diagnostic",
    ),
    Case(
        "the failing check again, only a substitution looking for a line break since",
        [test_run(), _line_break_sed("a, b = s.split(sep)\\n    return int(a) + int(b) + 1")],
        RUN,
        "stuck_same_diagnostic",
    ),
    Case(
        "the failing check again after a substitution whose line break is optional",
        [test_run(), _line_break_sed("a, b = s.split(sep)\\n*")],
        RUN,
        None,
    ),
    Case(
        "the failing check again, only a substitution of a line the file, seen whole, lacks since",
        [test_run(), _cat_parse(), _anchored_sed("")],
        RUN,
        "stuck_same_diagnostic",
    ),
    Case(
        "the failing check again after a substitution of a line the file has",
        [test_run(), _cat_parse(), _anchored_sed("    ")],
        RUN,
        None,
    ),
    Case("the failing check again after an edit", [test_run()] * 3 + [edit()], RUN, None),
    Case(
        "the failing check again after three failures and inline code that wrote",
        [test_run()] * 3 + [_inline_write()],
        RUN,
        None,
    ),
    Case(
        "the failing check again after three failures and a command that is no read",
        [test_run()] * 3 + [_touch()],
        RUN,
        None,
    ),
    Case("another call after three failures", [test_run()] * 3, VIEW, None),
    *(
        Case(
            f"the failing check again after three failures and `{command}`",
            [test_run()] * 3 + [_git(command)],
            RUN,
            None,
        )
        for command in ("git checkout src/parse.py", "git checkout .", "git stash", "git reset --hard", "git stash pop")
    ),
    Case("an edit that just failed, sent again unchanged", [_failed_edit()], BAD_EDIT, "repeat_failed_call"),
    Case(
        "an edit that failed, the failing test run after it, then the edit again unchanged",
        [_failed_edit(), test_run()],
        BAD_EDIT,
        "repeat_failed_call",
    ),
    Case(
        "an edit that failed, an edit that applied after it, then the first again",
        [_failed_edit(), edit(), test_run()],
        BAD_EDIT,
        None,
    ),
    Case(
        "an edit whose text to replace was not found, sent with another replacement",
        [_failed_edit()],
        ("str_replace_editor", {**BAD_EDIT[1], "new_str": "return int(a) + int(b)"}),
        "repeat_failed_call",
    ),
    Case(
        "an edit whose text to replace is in the file twice, sent with another replacement",
        [(*BAD_EDIT, TWICE)],
        ("str_replace_editor", {**BAD_EDIT[1], "new_str": "return int(a) + int(b)"}),
        "repeat_failed_call",
    ),
    Case(
        "an edit whose text to replace is in the file twice, a read, then the same edit",
        [(*BAD_EDIT, TWICE), view()],
        BAD_EDIT,
        "repeat_failed_call",
    ),
    Case(
        "an edit whose text to replace was not found, a read, then another replacement of it",
        [_failed_edit(), view()],
        ("str_replace_editor", {**BAD_EDIT[1], "new_str": "return int(a) + int(b)"}),
        "repeat_failed_call",
    ),
    Case(
        "an edit whose text to replace was not found, a read showing it there, then the same edit",
        [_failed_edit(), view(content="def parse(s):\n    return a - b\n")],
        BAD_EDIT,
        None,
    ),
    Case(
        "an edit whose text to replace is in the file twice, a read showing it once, then the same edit",
        [(*BAD_EDIT, TWICE), view(content="def parse(s):\n    return a - b\n")],
        BAD_EDIT,
        None,
    ),
    Case(
        "an edit whose text to replace was not found, a shell edit of its file that failed on another, the same edit",
        [_failed_edit(), _half_sed()],
        BAD_EDIT,
        None,
    ),
    Case(
        "an edit whose text to replace was not found, a command that is no read, then the same edit",
        [_failed_edit(), _touch()],
        BAD_EDIT,
        None,
    ),
    Case(
        "an edit turned down for its replacement, sent with another replacement",
        [(*BAD_EDIT, SAME_TEXTS)],
        ("str_replace_editor", {**BAD_EDIT[1], "new_str": "return int(a) + int(b)"}),
        None,
    ),
    Case(
        "an edit whose text to replace is in the file twice, sent to replace both",
        [(*BAD_EDIT, TWICE)],
        ("str_replace_editor", {**BAD_EDIT[1], "new_str": "return int(a) + int(b)", "replace_all": True}),
        None,
    ),
    Case(
        "an edit whose text to replace was not found, sent for another file",
        [_failed_edit()],
        ("str_replace_editor", {**BAD_EDIT[1], "path": "/workspace/src/pars.py", "new_str": "return int(a)"}),
        None,
    ),
    Case(
        "an edit that just failed, sent with other text",
        [_failed_edit()],
        ("str_replace_editor", {**BAD_EDIT[1], "old_str": "return int(a) + int(b) + 1"}),
        None,
    ),
    Case("the same view in a run of reads that re-reads", [view(), _grep(), view(), _grep()], VIEW, "read_stagnation"),
    Case("the read just made, again", [test_run(), view()], VIEW, "repeat_call"),
    Case("the search just made, again", [view(), _grep()], _grep()[:2], "repeat_call"),
    Case("the read just made, a failed edit since", [view(), _failed_edit()], VIEW, None),
    Case("the read just made, a command since", [view(), _touch()], VIEW, None),
    Case("the read just made, another range of it", [view()], (VIEW[0], {**VIEW[1], "view_range": [1, 2]}), None),
    Case("a command just run, again", [_touch()], _touch()[:2], None),
    Case("the same view once, in a run that has not re-read", [view(), _grep()], VIEW, None),
    Case(
        "an edit that changes nothing, after one already sent",
        [("str_replace_editor", {**BAD_EDIT[1], "new_str": "return a - b"}, NOT_FOUND)],
        ("str_replace_editor", {**BAD_EDIT[1], "old_str": "x = 1", "new_str": "x = 1"}),
        "pointless_call",
    ),
    Case("an edit made before, again, only a test and a read since", [edit(), test_run(), view()], EDIT, "redone_edit"),
    Case("an edit made before, again, its text shown in the file again", [edit(), test_run(), _shown()], EDIT, None),
    Case("an edit made before, again, after a command that is no read", [edit(), _touch()], EDIT, None),
    Case("an edit made before, again, after another edit of its file", [edit(), edit(old="x", new="y")], EDIT, None),
    Case(
        "an edit made before, again, its file unknown (SWE-agent's edit)", [_line_edit(), test_run()], LINE_EDIT, None
    ),
    Case(
        "an edit that changes nothing, the first one",
        [view()],
        ("str_replace_editor", {**BAD_EDIT[1], "new_str": "return a - b"}),
        None,
    ),
]


def _rules(turns: list[Any]) -> Any:
    chat = Chat()
    for turn in turns:
        chat.turn(turn)
    planned = analyse(engine(), chat.bytes())
    assert planned is not None
    return planned.decision.reply


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_what_the_block_rung_refuses(case: Case) -> None:
    rules = _rules(case.turns)
    name, arguments = case.proposal
    judgement = judge(ReplyView("", (name,), (orjson.dumps(arguments).decode(),)), rules)
    refused_by = judgement.refusal.pattern if judgement.refusal is not None else None
    assert (refused_by, judgement.gate is Gate.BLOCK) == (case.refused_by, case.refused_by is not None)


def test_a_refused_reply_is_asked_again_with_why_and_what_instead_a_call_required() -> None:
    rules = _rules([test_run()] * 3)
    judgement = judge(ReplyView("", (RUN[0],), (orjson.dumps(RUN[1]).decode(),)), rules)
    edit_ = rules.gates[Gate.BLOCK].edit_for(judgement.refusal)
    directive = edit_.messages[-1]["content"] if edit_.messages else ""
    assert "Your call was not run" in directive and "failed the same way 3 times" in directive
    assert "Next, read" in directive
    assert edit_.tool_choice == "str_replace_editor" and edit_.call_schema is not None  # the reader, not the shell
    assert edit_.call_schema["properties"]["name"]["enum"] == ["str_replace_editor"]


@pytest.mark.parametrize(
    ("between", "said"),
    [([view()], "a read"), ([_failed_edit()], "an edit the editor refused"), ([view(), _failed_edit()], "both")],
)
def test_the_check_refused_after_one_failure_says_nothing_changed_not_that_only_reads_ran(
    between: list[Any], said: str
) -> None:
    """Recovery bench (thirty-first run, shipping seed 8): an edit the editor refused ran between
    the failure and the re-run, and the refusal said "only reads have run since". Nothing changed
    is what holds, whatever ran."""
    judgement = judge(ReplyView("", (RUN[0],), (orjson.dumps(RUN[1]).decode(),)), _rules([test_run(), *between]))
    assert judgement.refusal is not None and judgement.refusal.pattern == "stuck_same_diagnostic", said
    assert "nothing has changed since" in judgement.refusal.reason and "only reads" not in judgement.refusal.reason


@pytest.mark.parametrize(
    ("turns", "fixed"),
    [
        ([test_run()] * 3, False),  # the check run three times, nothing edited: no fix to repeat
        ([test_run(), _failed_edit(), test_run(), _failed_edit(), test_run()], False),  # edits refused
        ([test_run(), edit(), test_run(), edit(old="a + b", new="a + b + 0"), test_run()], True),
    ],
    ids=["no edit", "edits the editor refused", "edits that landed and changed nothing"],
)
def test_the_re_ask_says_not_to_repeat_the_fix_only_after_a_fix_was_made(turns: list[Any], fixed: bool) -> None:
    """A reader's note on the local source (Qwen2.5-Coder-1.5B re-running its failing test from the
    start, every edit refused for its path): "Do not repeat the same fix" where none was made. An
    edit that landed is named ("do not edit parse.py again yet"); with none, nothing is held."""
    rules = _rules(turns)
    judgement = judge(ReplyView("", (RUN[0],), (orjson.dumps(RUN[1]).decode(),)), rules)
    assert judgement.refusal is not None
    directive = rules.gates[Gate.BLOCK].edit_for(judgement.refusal).messages[-1]["content"]
    assert "Next, read" in directive and "Do not repeat the same fix" not in directive
    assert ("Do not edit parse.py again yet." in directive) is fixed


def _one_shell_judgement(*turns: tuple[str, dict[str, Any], str]) -> Any:
    chat = Chat(tools=OPENHANDS_TOOLS[:1])
    for turn in turns:
        chat.turn(turn)
    planned = analyse(engine(), chat.bytes())
    assert planned is not None
    return judge(ReplyView("", (RUN[0],), (orjson.dumps(RUN[1]).decode(),)), planned.decision.reply)


TEST_READ = (
    "execute_bash",
    {"command": "sed -n '1,27p' /workspace/tests/test_parse.py"},
    "from parse import parse\n\n\ndef test_addition(): ...",
)
CODE_READ = ("execute_bash", {"command": "cat /workspace/parse.py"}, "def parse(s): ...")


HELD_SED = rf"^sed -i '{held_script(CODE_READ[2])}' (/workspace/parse\.py|(\./)?parse\.py)$"
"""An in-place sed of parse.py, named as the agent wrote it or by its name from its folder, its
text to replace held to the line the agent saw."""
FREE_SED = HELD_SED.replace(held_script(CODE_READ[2]), SED_SCRIPT)
"""The same, where the lines to change are not known: the text to replace is the model's."""


def test_a_one_shell_agent_is_refused_the_check_at_once_where_the_next_read_can_be_held_to_its_command() -> None:
    """With one shell for everything the re-ask cannot be narrowed to another tool, but it can be
    held to the next read's exact command: the quiet rule (refused from the first failure, only
    reads since) holds there too."""
    judgement = _one_shell_judgement(test_run())
    assert judgement.refusal is not None and judgement.refusal.pinned is not None


def test_a_one_shell_agent_that_read_everything_is_refused_the_check_at_once_and_held_to_an_edit() -> None:
    """Everything the failure points at is read and the proxy saw the code as it is: the next step
    is a change, and the shell's command is held to an in-place edit of that file (its text is
    the model's to write)."""
    judgement = _one_shell_judgement(test_run(), TEST_READ, CODE_READ)
    assert judgement.refusal is not None and judgement.refusal.pinned is not None
    assert dict(judgement.refusal.pinned.arguments) == {"command": Shaped(HELD_SED)}


def test_a_one_shell_agent_whose_code_file_could_not_be_read_is_refused_only_from_the_third_failure() -> None:
    """The file to change was never shown (its read failed): no edit of it is asked for, the re-ask
    is in words, and only the streak rule (three) refuses; the quiet rule stands aside."""
    missing = ("execute_bash", CODE_READ[1], "cat: /workspace/parse.py: No such file or directory")
    for failures, refused in ((1, False), (2, False), (3, True)):
        turns = [test_run(), TEST_READ, missing] + [test_run()] * (failures - 1)
        judgement = _one_shell_judgement(*turns)
        assert (judgement.refusal is not None) is refused, failures


def _one_shell_refusal(*turns: tuple[str, dict[str, Any], str]) -> tuple[Any, Any]:
    """The failing check three times in a one-shell agent, then `turns`, then the check proposed
    again: (the refusal, the re-ask's request)."""
    chat = Chat(tools=OPENHANDS_TOOLS[:1])
    for turn in [test_run()] * 3 + list(turns):
        chat.turn(turn)
    planned = analyse(engine(), chat.bytes())
    assert planned is not None
    rules = planned.decision.reply
    judgement = judge(ReplyView("", (RUN[0],), (orjson.dumps(RUN[1]).decode(),)), rules)
    assert judgement.refusal is not None and judgement.refusal.tool is None  # no other tool to narrow to
    return judgement.refusal, rules.gates[Gate.BLOCK].edit_for(judgement.refusal)


def test_a_refused_check_in_a_one_shell_agent_is_asked_again_for_the_next_read_held_to_that_command() -> None:
    """With one shell for everything the re-ask cannot be narrowed to another tool; asked in words,
    Qwen2.5-Coder-1.5B proposed the refused run again every time (recovery bench, leap): where the
    next step is a read with a known call, the schema holds the shell's command to it."""
    read = {"command": "sed -n '1,27p' /workspace/tests/test_parse.py"}
    refusal, edit_ = _one_shell_refusal()
    assert refusal.pinned is not None and dict(refusal.pinned.arguments) == read
    assert edit_.tool_choice == "execute_bash" and edit_.pinned == read
    assert edit_.call_schema["properties"]["arguments"]["properties"]["command"] == {"enum": [read["command"]]}
    _refusal, then = _one_shell_refusal(TEST_READ, test_run())
    assert then.pinned == {"command": "cat /workspace/parse.py"}  # the code under test, which the test imports


def test_a_refused_check_in_a_one_shell_agent_is_asked_for_an_edit_of_the_file_once_everything_is_read() -> None:
    """The next step is a change: the call schema holds the shell's command to an in-place edit of
    the file the failure points at, by pattern; what it changes is the model's to write."""
    refusal, edit_ = _one_shell_refusal(TEST_READ, test_run(), CODE_READ, test_run())
    assert refusal.pinned is not None and "Make a change" in refusal.instead
    assert edit_.tool_choice == "execute_bash"
    held = edit_.call_schema["properties"]["arguments"]["properties"]["command"]
    assert held == {"type": "string", "pattern": HELD_SED}


TEST_VIEW_OF_PARSE = view("/workspace/tests/test_parse.py", "from src.parse import parse\n\n\ndef test_addition():\n    assert parse('1+2') == 3\n")  # fmt: skip
PARSE_LINES = ("    a, b = s.split('+')", "    return int(a) + int(b) + 1")
NOT_A_COPY = unlike(PARSE_LINES)
HELD_EDIT = {"command": "str_replace", "path": "/workspace/src/parse.py", "old_str": OneOf(PARSE_LINES), "new_str": Shaped(NOT_A_COPY or "")}  # fmt: skip


def _refused_run(turns: list[Any]) -> tuple[Any, Any]:
    """The failing check proposed again after `turns`: (the refusal, the block gate's re-ask)."""
    rules = _rules(turns)
    judgement = judge(ReplyView("", (RUN[0],), (orjson.dumps(RUN[1]).decode(),)), rules)
    assert judgement.refusal is not None
    return judgement.refusal, rules.gates[Gate.BLOCK].edit_for(judgement.refusal)


def test_an_agent_with_an_editor_that_read_everything_is_refused_the_check_and_held_to_the_edit_of_the_lines() -> None:
    """Everything the failure points at is read, the code as it is seen: the re-ask is held to the
    editor's call changing one of the lines of the function the failure calls (its header and
    docstring left out), the text to replace one of them, the replacement the model's (recovery
    bench, bank, OpenHands style: narrowed to the editor alone, the model sent a text to replace
    that the file had before the agent's last edit, twice)."""
    refusal, edit_ = _refused_run([test_run(), TEST_VIEW_OF_PARSE, view(content=PARSE)])
    assert refusal.pinned is not None and dict(refusal.pinned.arguments) == HELD_EDIT
    assert edit_.tool_choice == "str_replace_editor" and edit_.pinned == HELD_EDIT
    arguments = edit_.call_schema["properties"]["arguments"]
    assert arguments["properties"]["old_str"] == {"type": "string", "enum": list(PARSE_LINES)}
    assert arguments["properties"]["new_str"] == {"type": "string", "pattern": NOT_A_COPY}


@pytest.mark.parametrize(
    ("new_str", "accepted"),
    [
        ("    return int(a) + int(b)", True),  # the fix
        ("    a, b = s.split('-')", True),  # a change of the other line
        ("    return int(a) + int(b) + 1\n    # checked", True),  # more lines
        ("    return int(a) + int(b) + 1", False),  # must not: the line it replaces, copied (issue 51: 8 of 14)
        ("    a, b = s.split('+')", False),  # must not: the other line, as it is
        ("", False),  # must not: nothing (the line deleted)
    ],
)
def test_the_held_edit_s_new_text_cannot_be_the_line_it_replaces(new_str: str, accepted: bool) -> None:
    """The replacement of the held line is the model's, but not the line as it was: asked for the
    lines "as they should be", Qwen2.5-Coder-1.5B copied them back in 8 of the 14 edits the proxy
    asked for on three new repositories (issue 51). With one line of the function held, never its
    header, the definition the test calls is not the model's to delete either (recovery bench,
    vowels in OpenHands style, seeds 1 and 2 at 6f299c0: `VOWELS = "aeiou"` in place of the
    constant and `count_vowels` whole)."""
    _refusal, edit_ = _refused_run([test_run(), TEST_VIEW_OF_PARSE, view(content=PARSE)])
    pattern = edit_.call_schema["properties"]["arguments"]["properties"]["new_str"]["pattern"]
    written = orjson.dumps(new_str).decode()[1:-1]  # the JSON text the model writes between the quotes
    assert (re.fullmatch(pattern, written) is not None) is accepted


def _finish_retry(chat: Chat) -> Any:
    planned = analyse(engine(), chat.bytes())
    assert planned is not None
    return planned.decision.reply.gates[Gate.FINISH].build()


def test_a_finish_with_everything_read_and_nothing_run_since_the_failure_is_asked_again_held_to_the_change() -> None:
    """The finish gate's retry, where nothing ran since the failure, asks for the same next step as
    the block rung's re-ask and is held to its exact call the same way: an in-place sed of the
    code in a one-shell agent, the editor's call with the lines to replace beside an editor
    (recovery bench, stack in `bash` style, seed 1: asked in words for a change to stack.py, the
    model sent a line-break sed of the test file, then a sed with its quote left open)."""
    one_shell = Chat(tools=OPENHANDS_TOOLS[:1])
    for turn in (test_run(), TEST_READ, CODE_READ):
        one_shell.turn(turn)
    edit_ = _finish_retry(one_shell)
    assert edit_.tool_choice == "execute_bash" and edit_.pinned == {"command": Shaped(HELD_SED)}
    assert edit_.call_schema is not None and "Make a change to" in edit_.messages[-1]["content"]
    editor = Chat()
    for turn in (test_run(), TEST_VIEW_OF_PARSE, view(content=PARSE)):
        editor.turn(turn)
    edit_ = _finish_retry(editor)
    assert edit_.tool_choice == "str_replace_editor" and edit_.pinned == HELD_EDIT


def test_a_finish_after_an_edit_is_asked_for_the_fix_and_the_rerun_with_no_call_held() -> None:
    """Something that may have changed the code ran since the failure: the retry names the fix and
    the re-run, and any offered call will do (a held edit would undo the agent's own)."""
    edit_ = _finish_retry(Chat().turn(test_run()).turn(view(content=PARSE)).turn(edit()))
    assert "Fix the cause, then re-run it" in edit_.messages[-1]["content"]
    assert edit_.pinned is None and edit_.require_call and edit_.tool_choice is None


def test_an_agent_with_an_editor_whose_code_changed_since_it_was_seen_is_held_to_a_look_not_to_an_edit() -> None:
    """The code was edited after the proxy saw it: no text to replace is known; the re-ask is held to
    the look at the file as it is now (asked in words, the model wrote the editor's `str_replace`
    with the view's range: recovery bench, vowels, OpenHands style)."""
    changed = edit(old="int(b) + 1", new="int(b) - 1")
    refusal, edit_ = _refused_run([test_run(), TEST_VIEW_OF_PARSE, view(content=PARSE), changed, test_run()])
    assert "First look at /workspace/src/parse.py as it is now" in refusal.instead
    assert edit_.tool_choice == "str_replace_editor"
    assert edit_.pinned == {"command": "view", "path": "/workspace/src/parse.py"}


def test_the_block_rung_is_armed_only_while_some_pattern_may_refuse() -> None:
    """Nothing to refuse, nothing held: a working agent's streamed reply flows as it comes. (A
    check that just failed arms it: run again with nothing changed, it would fail again.)"""
    assert _rules([view(), edit(), test_run("@pytest_pass")]).refuse is None
    assert _rules([test_run(), edit()]).refuse is None
    assert _rules([test_run()]).refuse is not None
    assert _rules([test_run()] * 3).refuse is not None


PARSE = "     1\tdef parse(s):\n     2\t    a, b = s.split('+')\n     3\t    return int(a) + int(b) + 1\n"
MISREMEMBERED = {**BAD_EDIT[1], "old_str": "a, b = s.split('+')\nreturn int(a) + int(b) - 1"}


def _instead(turns: list[Any], proposal: dict[str, Any]) -> str:
    rules = _rules(turns)
    judgement = judge(ReplyView("", ("str_replace_editor",), (orjson.dumps(proposal).decode(),)), rules)
    assert judgement.refusal is not None
    return judgement.refusal.instead


def test_an_edit_refused_after_not_found_is_handed_the_lines_it_meant_whole_as_the_file_has_them() -> None:
    """Two lines misremembered (indentation lost, one sign wrong): the instead quotes the two
    lines of the viewed file they were meant to match, line numbers off, in the agent's edit call."""
    failed = ("str_replace_editor", MISREMEMBERED, NOT_FOUND)
    instead = _instead([view(content=PARSE), failed], MISREMEMBERED)
    assert "The lines of /workspace/src/parse.py it was meant to match, exactly as the file has them now:" in instead
    assert (
        "\n    a, b = s.split('+')\n    return int(a) + int(b) + 1\nChange one of them: call str_replace_editor"
        in instead
    )
    assert "with old_str one of those lines, whole, and new_str that line changed as it should be" in instead


def test_an_edit_whose_text_to_replace_is_in_the_file_twice_is_refused_with_another_replacement_and_asked_to_widen_it() -> (
    None
):
    """The editor said the text to replace is there twice; the same text with another replacement
    meets the same answer (recovery bench, test part, trim seed 4 at 808b083: three more
    replacements, each turned down the same way). The refusal says so, and asks for the lines
    around the one meant: not the lines it meant, which are there twice as well."""
    twice = "     1\tdef parse(s):\n     2\t    return a - b\n     3\t\n     4\tdef other(a, b):\n     5\t    return a - b\n"
    rules = _rules([view(content=twice), (*BAD_EDIT, TWICE)])
    proposal = {**BAD_EDIT[1], "new_str": "return int(a) + int(b)"}
    judgement = judge(ReplyView("", ("str_replace_editor",), (orjson.dumps(proposal).decode(),)), rules)
    assert judgement.refusal is not None and judgement.refusal.pattern == "repeat_failed_call"
    assert "has the `old_str` of an edit that was turned down with:" in judgement.refusal.reason
    assert "any replacement fails the same way" in judgement.refusal.reason
    assert judgement.refusal.instead == (
        "`old_str` is in the file more than once: add the lines around the one you mean, so it matches once."
    )


def test_a_refused_edit_is_asked_again_with_the_lines_it_meant_held_in_the_call_schema() -> None:
    """The lever the server honours: the re-ask's schema holds the edit's path and text to replace
    to what the file has; only the new text is the model's to write (recovery bench: asked in
    words, the model sent the same not-found old_str again)."""
    rules = _rules([view(content=PARSE), ("str_replace_editor", MISREMEMBERED, NOT_FOUND)])
    judgement = judge(ReplyView("", ("str_replace_editor",), (orjson.dumps(MISREMEMBERED).decode(),)), rules)
    edit_ = rules.gates[Gate.BLOCK].edit_for(judgement.refusal)
    assert edit_.tool_choice == "str_replace_editor" and edit_.call_schema is not None
    arguments = edit_.call_schema["properties"]["arguments"]
    assert arguments["properties"]["old_str"] == {"type": "string", "enum": list(PARSE_LINES)}
    assert arguments["properties"]["path"] == {"enum": ["/workspace/src/parse.py"]}
    assert arguments["properties"]["command"] == {"enum": ["str_replace"]}
    assert {"old_str", "new_str", "path", "command"} <= set(arguments["required"])
    assert arguments["properties"]["new_str"] == {"type": "string", "pattern": NOT_A_COPY}


def test_a_refused_edit_of_a_file_not_read_since_it_changed_is_asked_for_a_look_at_it_held_to_that_read() -> None:
    """Where the proxy has not seen the lines, the next step is to look: the re-ask can only be
    the read of that file."""
    rules = _rules([view(content=PARSE), edit(), ("str_replace_editor", MISREMEMBERED, NOT_FOUND)])
    judgement = judge(ReplyView("", ("str_replace_editor",), (orjson.dumps(MISREMEMBERED).decode(),)), rules)
    assert judgement.refusal is not None and judgement.refusal.pinned is not None
    edit_ = rules.gates[Gate.BLOCK].edit_for(judgement.refusal)
    assert edit_.pinned == {"command": "view", "path": "/workspace/src/parse.py"}
    assert edit_.call_schema is not None
    held = edit_.call_schema["properties"]["arguments"]["properties"]
    assert held["command"] == {"enum": ["view"]} and held["path"] == {"enum": ["/workspace/src/parse.py"]}


def test_a_no_op_edit_of_text_the_file_lacks_is_asked_again_with_the_lines_it_meant_held() -> None:
    """`pointless_call` refuses an edit whose new text is its old text; where that text is not in
    the file either, its re-ask carries the lines it meant, as `repeat_failed_call`'s does
    (recovery bench, stack: a no-op edit of a misremembered class came back three times)."""
    no_op = {**MISREMEMBERED, "new_str": MISREMEMBERED["old_str"]}
    rules = _rules([view(content=PARSE), ("str_replace_editor", {**no_op, "old_str": "y", "new_str": "y"}, NOT_FOUND)])
    judgement = judge(ReplyView("", ("str_replace_editor",), (orjson.dumps(no_op).decode(),)), rules)
    assert judgement.refusal is not None and judgement.refusal.pattern == "pointless_call"
    edit_ = rules.gates[Gate.BLOCK].edit_for(judgement.refusal)
    assert edit_.pinned is not None and edit_.pinned["old_str"] == OneOf(PARSE_LINES)


def _no_op_refused(turns: list[Any], text: str) -> tuple[Any, Any]:
    """(the refusal, the re-ask's edit) of a no-op edit of `text`, after one made already."""
    no_op = {**BAD_EDIT[1], "old_str": text, "new_str": text}
    rules = _rules([*turns, ("str_replace_editor", {**no_op, "old_str": "y", "new_str": "y"}, NOT_FOUND)])
    judgement = judge(ReplyView("", ("str_replace_editor",), (orjson.dumps(no_op).decode(),)), rules)
    assert judgement.refusal is not None and judgement.refusal.pattern == "pointless_call"
    return judgement.refusal, rules.gates[Gate.BLOCK].edit_for(judgement.refusal)


def test_a_no_op_edit_of_text_the_file_has_is_asked_again_with_that_text_held_the_new_text_its_own() -> None:
    """The text to replace is right; only the replacement is missing. Asked in words to write the
    real text, or to look again, Qwen2.5-Coder-1.5B viewed the file and sent the same no-op edit,
    turn after turn (recovery bench, stack); held to the same text, "what replaces it must differ",
    it sent the same copy again, and the stop rung handed the run back (issue 51). The re-ask says
    what happened, once, and holds the replacement to any text but the line."""
    refusal, edit_ = _no_op_refused([view(content=PARSE)], "    return int(a) + int(b) + 1")
    line = "    return int(a) + int(b) + 1"
    assert edit_.pinned == {
        "command": "str_replace",
        "path": "/workspace/src/parse.py",
        "old_str": OneOf((line,)),
        "new_str": Shaped(unlike([line]) or ""),
    }
    assert "that replaced the lines with themselves" in refusal.reason
    assert refusal.instead.startswith("The lines of /workspace/src/parse.py it replaced, exactly as the file has them")
    held = edit_.call_schema["properties"]["arguments"]["properties"]
    assert held["old_str"] == {"type": "string", "enum": [line]}
    assert re.fullmatch(held["new_str"]["pattern"], line) is None


TWO_FUNCTIONS = PARSE + "     4\t\n     5\t\n     6\tdef unused(x):\n     7\t    return x\n"


def test_a_no_op_edit_of_the_whole_file_is_held_to_the_function_the_failure_calls() -> None:
    whole = "def parse(s):\n    a, b = s.split('+')\n    return int(a) + int(b) + 1\n\n\ndef unused(x):\n    return x"
    _refusal, edit_ = _no_op_refused([test_run(), view(content=TWO_FUNCTIONS)], whole)
    assert edit_.pinned["old_str"] == OneOf(PARSE_LINES)


def test_a_no_op_edit_of_text_not_holding_the_failing_function_keeps_its_own_text() -> None:
    _refusal, edit_ = _no_op_refused([test_run(), view(content=TWO_FUNCTIONS)], "def unused(x):\n    return x")
    assert edit_.pinned["old_str"] == OneOf(("    return x",))


SAME_TEXT = "ERROR:\nNo replacement was performed. `new_str` and `old_str` must be different."
"""OpenHands' editor's answer to an edit that replaces a text with itself."""
EDITED = "The file /workspace/src/parse.py has been edited."
"""The bench agent's editor's (`bench/tiny_agent.py`): it applies the copy."""


@pytest.mark.parametrize("answer", [SAME_TEXT, EDITED])
@pytest.mark.parametrize(
    ("old_str", "times"),
    [
        ("    return int(a) + int(b) + 1", 0),  # one of the lines the proxy held: its remedy answered badly
        ("def parse(s):\n    a, b = s.split('+')\n    return int(a) + int(b) + 1", 0),  # the lines it quoted whole
        ("def unused(x):\n    return x", 2),  # must: the agent's own copy, twice, is its loop
    ],
)
def test_copies_of_the_lines_the_proxy_asked_to_change_never_count_toward_a_hand_back(
    old_str: str, times: int, answer: str
) -> None:
    """The stop rung hands a run back when the call asked again was made in vain `STOP_AFTER` (2)
    times (`Refusal.times`). A copy of the very lines the proxy's own held edit quoted is its
    remedy answered badly, not the agent's loop: the forced edit quoted a function, the model
    copied it, the re-ask got the copy again, and the run was handed back at turn 5 of 10 on both
    seeds of the easiest task (issue 51). Copies of other text still count. Whether the editor
    applied the copy or turned it down, the refusal is `pointless_call`'s (it says what happened)."""
    copy = {**BAD_EDIT[1], "old_str": old_str, "new_str": old_str}
    rules = _rules(
        [test_run(), TEST_VIEW_OF_PARSE, view(content=TWO_FUNCTIONS), *[("str_replace_editor", copy, answer)] * 2]
    )
    judgement = judge(ReplyView("", ("str_replace_editor",), (orjson.dumps(copy).decode(),)), rules)
    assert judgement.refusal is not None and judgement.refusal.pattern == "pointless_call"
    assert judgement.refusal.times == times


def test_without_a_read_of_the_file_since_it_changed_no_lines_are_quoted() -> None:
    """Edited after the view: what the view showed is not the file any more; the instead asks
    for a look at it, and quotes nothing."""
    failed = ("str_replace_editor", MISREMEMBERED, NOT_FOUND)
    instead = _instead([view(content=PARSE), edit(), failed], MISREMEMBERED)
    assert "Look at /workspace/src/parse.py as it is now first" in instead and "split" not in instead


def test_an_empty_reply_while_the_rerun_would_be_refused_is_asked_for_the_next_step_not_the_rerun() -> None:
    """The action gate's retry does not ask for the call the block rung would refuse: it asks for
    the step the block rung suggests, through that step's tool (recovery bench, openhands style:
    asked to re-run, the model did, and the spent budget let the refused call through)."""
    rules = _rules([test_run()] * 2)
    edit_ = rules.gates[Gate.ACTION].build()
    directive = edit_.messages[-1]["content"] if edit_.messages else ""
    assert "re-run the failing check" not in directive and "Next, read" in directive
    assert edit_.tool_choice == "str_replace_editor" and not edit_.require_call


def test_an_empty_reply_in_a_one_shell_agent_is_asked_for_the_next_read_held_to_its_command() -> None:
    """One shell: the action gate's retry is held to the block rung's next read, not to the read
    our earlier instruction named and the agent already made (recovery bench, bank in `bash`
    style: asked in words, the model copied the old instruction's call and read the test four times)."""
    chat = Chat(tools=OPENHANDS_TOOLS[:1])
    for turn in [test_run()] * 3 + [TEST_READ]:
        chat.turn(turn)
    planned = analyse(engine(), chat.bytes())
    assert planned is not None
    edit_ = planned.decision.reply.gates[Gate.ACTION].build()
    assert edit_.tool_choice == "execute_bash" and edit_.pinned == {"command": "cat /workspace/parse.py"}
    assert edit_.call_schema is not None
    held = edit_.call_schema["properties"]["arguments"]["properties"]["command"]
    assert held == {"enum": ["cat /workspace/parse.py"]}


def test_an_empty_reply_to_our_own_instruction_is_held_to_its_step_when_the_rerun_would_be_refused() -> None:
    """Our instruction is in the request and unanswered; the retry asks for the step the block rung
    would send the model to (which the instruction names too), held to that read's exact call."""
    rules = _rules([test_run()] * 3)  # the third failure: our instruction is in the request
    edit_ = rules.gates[Gate.ACTION].build()
    directive = edit_.messages[-1]["content"] if edit_.messages else ""
    assert "failed the same way 3 times" in directive and "Next, read" in directive
    assert edit_.tool_choice == "str_replace_editor" and not edit_.require_call
    assert edit_.pinned == {"command": "view", "path": "/workspace/tests/test_parse.py", "view_range": [1, 27]}


def test_an_empty_reply_after_an_edit_is_still_asked_to_rerun_the_failing_check() -> None:
    rules = _rules([test_run(), edit()])
    edit_ = rules.gates[Gate.ACTION].build()
    directive = edit_.messages[-1]["content"] if edit_.messages else ""
    assert "Next, re-run the failing check" in directive and edit_.tool_choice is None and edit_.require_call


SED = ("execute_bash", {"command": "sed -i 's/int(a) + int(b) + 1/int(a) + int(b) + 0/' /workspace/parse.py"}, "")
CODE_AFTER = ("execute_bash", {"command": "cat /workspace/parse.py"}, "def parse(s):\n    return int(a) + int(b) + 0\n")


def test_a_one_shell_agent_repeating_its_sed_is_refused_with_the_failure_it_left_and_held_to_an_edit() -> None:
    """The recovery bench's cycle (bank, vowels): the same `sed -i`, the failing test, `cat`, the
    same `sed -i`. The file is as the first left it: the repeat is refused, the re-ask says what the
    failure expects and what the code gives (issue 61) and is held to an in-place edit of the file
    (a different one is the model's to write)."""
    chat = Chat(tools=OPENHANDS_TOOLS[:1])
    for turn in (test_run(), CODE_READ, SED, test_run(), CODE_AFTER):
        chat.turn(turn)
    planned = analyse(engine(), chat.bytes())
    assert planned is not None
    judgement = judge(ReplyView("", (SED[0],), (orjson.dumps(SED[1]).decode(),)), planned.decision.reply)
    refusal = judgement.refusal
    assert refusal is not None and refusal.pattern == "redone_edit"
    assert "as that edit left it" in refusal.reason
    assert "The failing test expects `parse('1 + 2')` to be `3`; it is `4`." in refusal.instead
    # the test not read yet, the lines to change are not known: the text to replace is the model's
    assert refusal.pinned is not None and refusal.pinned.arguments["command"] == Shaped(FREE_SED)


TEST_FILE = "/workspace/tests/test_parse.py"
WRONG_FILE = {
    "command": "str_replace",
    "path": TEST_FILE,
    "old_str": "return int(a) + int(b) + 1",
    "new_str": "return 3",
}
TEST_VIEW = view(TEST_FILE, "from parse import parse\n\n\ndef test_addition():\n    assert parse('1 + 2') == 3\n")


def _wrong_file_instead(code_known: bool, test_view: tuple[str, dict[str, Any], str] = TEST_VIEW) -> Any:
    not_found = f"ERROR:\nNo replacement was performed, old_str `return int(a) + int(b) + 1` did not appear verbatim in {TEST_FILE}."
    turns = [test_run(), test_view, ("str_replace_editor", WRONG_FILE, not_found)]
    rules = _rules(([view("/workspace/parse.py", PARSE)] if code_known else []) + turns)
    judgement = judge(ReplyView("", ("str_replace_editor",), (orjson.dumps(WRONG_FILE).decode(),)), rules)
    assert judgement.refusal is not None
    return judgement.refusal


def test_code_sent_as_an_edit_of_its_test_is_asked_again_with_the_lines_of_the_code_file_it_meant() -> None:
    """The code's lines sent as an edit of the test that runs them (a small model, recovery bench
    calc and temps): where the proxy saw the code file the test tests, the re-ask says so and holds
    the edit to that file's lines."""
    refusal = _wrong_file_instead(code_known=True)
    assert f"That text is not in {TEST_FILE}, a test: the code it tests is /workspace/parse.py." in refusal.instead
    assert refusal.pinned is not None and refusal.pinned.arguments["path"] == "/workspace/parse.py"
    assert refusal.pinned.arguments["old_str"] == OneOf(("    return int(a) + int(b) + 1",))


def test_code_sent_as_an_edit_of_its_test_is_asked_for_a_look_at_a_code_file_the_proxy_never_saw() -> None:
    """`parse.py` is only a guess from the test's name until the transcript shows it exists (the
    test as read does not import it): no lines of it are quoted or held, the re-ask is held to a
    look at it (a read that may find nothing)."""
    unimported = view(
        TEST_FILE, "from parsing import parse\n\n\ndef test_addition():\n    assert parse('1 + 2') == 3\n"
    )
    refusal = _wrong_file_instead(code_known=False, test_view=unimported)
    assert "the code it tests is likely /workspace/parse.py" in refusal.instead
    assert refusal.pinned is not None and refusal.pinned.arguments == {"command": "view", "path": "/workspace/parse.py"}


def test_code_sent_as_an_edit_of_its_test_that_imports_the_code_is_asked_for_a_look_at_that_file() -> None:
    """The test as read imports `parse`: the file is named as the code it tests, its lines not
    seen yet, so the re-ask is the look."""
    refusal = _wrong_file_instead(code_known=False)
    assert (
        f"That text is not in {TEST_FILE}, a test: the code it tests is /workspace/parse.py. Look at" in refusal.instead
    )
    assert refusal.pinned is not None and refusal.pinned.arguments == {"command": "view", "path": "/workspace/parse.py"}


WHOLE = ("execute_bash", {"command": "cat /workspace/parse.py"}, "def parse(s):\n    return int(a) + int(b) + 1\n")
PART = ("execute_bash", {"command": "sed -n '1,1p' /workspace/parse.py"}, "def parse(s):\n")
FIRST_24 = ("execute_bash", {"command": "sed -n '1,24p' /workspace/parse.py"}, WHOLE[2])
HEAD_2 = ("execute_bash", {"command": "head -n 2 /workspace/parse.py"}, WHOLE[2])
HEAD_24 = ("execute_bash", {"command": "head -24 /workspace/parse.py"}, WHOLE[2])
ABSENT = ("execute_bash", {"command": "sed -i 's/return a + b + 1/return a + b/' /workspace/parse.py"})


INLINE = ("execute_bash", {"command": "python - <<'PY'\nimport fix\nfix.apply('/workspace/parse.py')\nPY"}, "")
OWN_SCRIPT = ("execute_bash", {"command": "python apply_fix.py"}, "patched")


@pytest.mark.parametrize(
    ("reads", "refused"),
    [
        ((WHOLE,), True),
        ((PART,), False),
        ((FIRST_24,), True),
        ((HEAD_24,), True),
        ((HEAD_2,), False),
        ((WHOLE, INLINE), False),
        ((WHOLE, OWN_SCRIPT), False),
    ],
    ids=[
        "the file read whole",
        "the file read in part",
        "its first 24 lines asked for, 2 printed: the file ended first (recovery bench, leap)",
        "head -24, the same",
        "its first 2 lines asked for, 2 printed: more may follow",
        "the file read whole, then inline code that may have written it",
        "the file read whole, then a script of the agent's own run",
    ],
)
def test_a_substitution_of_text_the_file_does_not_have_is_refused_only_where_the_file_was_seen_whole(
    reads: tuple[tuple[str, dict[str, Any], str], ...], refused: bool
) -> None:
    """`sed -i` of text the file lacks prints nothing and changes nothing: refused, with the line it
    was meant to match, where the agent's last read showed the whole file and nothing since could
    have written it unseen; after a read of part of it the text may be in the rest."""
    chat = Chat(tools=OPENHANDS_TOOLS[:1])
    for turn in (test_run(), *reads):
        chat.turn(turn)
    planned = analyse(engine(), chat.bytes())
    assert planned is not None
    judgement = judge(ReplyView("", (ABSENT[0],), (orjson.dumps(ABSENT[1]).decode(),)), planned.decision.reply)
    if not refused:
        assert judgement.refusal is None
        return
    assert judgement.refusal is not None and judgement.refusal.pattern == "unmatched_edit"
    assert "    return int(a) + int(b) + 1" in judgement.refusal.instead
    assert judgement.refusal.pinned is not None


LEAP_TEST = ("execute_bash", {"command": "sed -n '1,24p' /workspace/tests/test_leap.py"}, "from leap import is_leap\n\n\ndef test_century():\n    assert not is_leap(1900)\n")  # fmt: skip
LEAP_CODE = ("execute_bash", {"command": "cat /workspace/leap.py"}, 'def is_leap(year):\n    """True for Gregorian leap years."""\n    return year % 4 == 0\n')  # fmt: skip
LEAP_RUN = ("execute_bash", {"command": "cd /workspace && python -m pytest"}, "@pytest_addition_a")


@pytest.mark.parametrize(
    ("text", "holder"),
    [("True for Gregorian leap years.", "/workspace/leap.py"), ("Julian calendar", None)],
    ids=["the code's docstring, which leap.py has: held to leap.py", "text no file has: the test's own re-ask"],
)
def test_a_substitution_sent_to_the_test_of_text_its_code_has_is_asked_again_in_that_code(
    text: str, holder: str | None
) -> None:
    """Recovery bench, leap (one shell): `sed -i 's/True for Gregorian leap years./.../' tests/test_leap.py`,
    the code's docstring sent to its test (`.` read as any character; the test read whole by a
    `sed -n '1,24p'` that printed fewer lines)."""
    chat = Chat(tools=OPENHANDS_TOOLS[:1])
    for turn in (LEAP_RUN, LEAP_TEST, LEAP_CODE):
        chat.turn(turn)
    planned = analyse(engine(), chat.bytes())
    assert planned is not None
    proposal = {"command": f"sed -i 's/{text}/X/g' /workspace/tests/test_leap.py"}
    judgement = judge(ReplyView("", ("execute_bash",), (orjson.dumps(proposal).decode(),)), planned.decision.reply)
    assert judgement.refusal is not None and judgement.refusal.pattern == "unmatched_edit"
    held = judgement.refusal.pinned.arguments["command"].pattern
    if holder is None:
        assert "test_leap" in held and "is in" not in judgement.refusal.instead
    else:
        assert f"is in {holder}, the file that has it" in judgement.refusal.instead
        assert "test_leap" not in held and "leap" in held


@pytest.mark.parametrize(
    ("target", "held"),
    [("/workspace/parse.py", HELD_SED), ("/workspace/tests/test_parse.py", HELD_SED)],
    ids=["the code: held to an edit of it", "its test, the code seen: held to an edit of the code"],
)
def test_a_one_shell_no_op_sed_is_asked_again_held_to_an_in_place_edit(target: str, held: str) -> None:
    no_op = ("execute_bash", {"command": f"sed -i 's/a + b/a + b/' {target}"}, "")
    chat = Chat(tools=OPENHANDS_TOOLS[:1])
    for turn in (test_run(), TEST_READ, CODE_READ, no_op):
        chat.turn(turn)
    planned = analyse(engine(), chat.bytes())
    assert planned is not None
    judgement = judge(ReplyView("", ("execute_bash",), (orjson.dumps(no_op[1]).decode(),)), planned.decision.reply)
    assert judgement.refusal is not None and judgement.refusal.pattern == "pointless_call"
    assert judgement.refusal.pinned is not None and judgement.refusal.pinned.arguments["command"] == Shaped(held)


BANK_SED = (
    "sed -i 's/def withdraw(self, amount):/def withdraw(self, amount): if amount > self.balance: raise "
    'ValueError("insufficient funds: " + str(amount)) return self.balance\' bank/bank.py'
)
UNTERMINATED = '{"returncode": 1, "output": "sed: -e expression #1, char 137: unterminated `s\' command\\n"}'
BANK_TEST = '{"returncode": 1, "output": "FAILED tests/test_bank.py::test_withdraw - assert 150 == 50\\n1 failed"}'


def test_a_sed_its_parser_rejected_is_refused_again_after_the_failing_test() -> None:
    """Recovery bench, bank, one shell: the same unterminated substitution and the test, four
    times over; the test between two tries reset the count, so the second try was never refused."""
    chat = Chat(tools=OPENHANDS_TOOLS[:1])
    chat.turn(("execute_bash", {"command": BANK_SED}, UNTERMINATED))
    chat.turn(("execute_bash", {"command": "python -m pytest"}, BANK_TEST))
    rules = analyse(engine(), chat.bytes())
    assert rules is not None
    proposal = orjson.dumps({"command": BANK_SED}).decode()
    judgement = judge(ReplyView("", ("execute_bash",), (proposal,)), rules.decision.reply)
    assert judgement.refusal is not None and judgement.refusal.pattern == "repeat_failed_call"
    assert "unterminated" in judgement.refusal.reason
    assert "lacks its closing `/`" in judgement.refusal.instead  # the cause, not "change its arguments"


OPEN_QUOTE_SED = "sed -i 's/^    return int(a) + int(b) + 1$/    return int(a) + print(\" } }' /workspace/parse.py"
UNPARSED = '{"returncode": 2, "output": "bash: -c: line 1: unexpected EOF while looking for matching `\'\'\\n"}'


@pytest.mark.parametrize(
    ("command", "rerun_asked"),
    [
        (OPEN_QUOTE_SED, False),
        ("sed -i 's/1$/0/' /workspace/parse.py\n" + OPEN_QUOTE_SED, True),
    ],
    ids=["one line bash could not parse: nothing ran", "two lines: the first may have written"],
)
def test_an_empty_reply_after_a_command_bash_could_not_parse_is_not_asked_for_the_rerun(
    command: str, rerun_asked: bool
) -> None:
    """Recovery bench, stack in `bash` style, seed 1: a sed cut with its quote open ran nothing, yet
    the action gate asked for the re-run of the failing check as after an edit."""
    chat = Chat(tools=OPENHANDS_TOOLS[:1])
    for turn in (test_run(), TEST_READ, CODE_READ, ("execute_bash", {"command": command}, UNPARSED)):
        chat.turn(turn)
    planned = analyse(engine(), chat.bytes())
    assert planned is not None
    edit_ = planned.decision.reply.gates[Gate.ACTION].build()
    directive = edit_.messages[-1]["content"] if edit_.messages else ""
    assert ("re-run the failing check" in directive) is rerun_asked
    if not rerun_asked:
        assert edit_.pinned == {"command": Shaped(HELD_SED)}


def test_a_read_refused_as_just_made_asks_for_the_failure_s_next_step_not_a_fix() -> None:
    """With a failure live, the re-ask names the read the failure points at, held, and says
    nothing of a fix (none was made); with none, it asks for the change the read was for."""
    live = judge(ReplyView("", (VIEW[0],), (orjson.dumps(VIEW[1]).decode(),)), _rules([test_run(), view()]))
    assert live.refusal is not None and live.refusal.pattern == "repeat_call"
    assert "is the call you just made" in live.refusal.reason
    assert live.refusal.instead.startswith("Next, read the failing test")
    assert live.refusal.pinned is not None and live.refusal.pinned.arguments["path"] == "/workspace/tests/test_parse.py"
    assert not live.refusal.halts  # a read is never the stop rung's
    quiet = judge(ReplyView("", (VIEW[0],), (orjson.dumps(VIEW[1]).decode(),)), _rules([view()]))
    assert quiet.refusal is not None and quiet.refusal.pinned is None
    assert quiet.refusal.instead == "Use what it showed: make the change it points to, or run the check."


def test_the_failure_s_own_read_refused_again_is_not_asked_for() -> None:
    """The read the failure points at, just made, proposed again: the re-ask does not name it."""
    test_file = ("str_replace_editor", {"command": "view", "path": "/workspace/tests/test_parse.py"})
    seen = view(path="/workspace/tests/test_parse.py", content="def test_addition():\n    assert parse('1+2') == 3\n")
    judged = judge(ReplyView("", (test_file[0],), (orjson.dumps(test_file[1]).decode(),)), _rules([test_run(), seen]))
    assert judged.refusal is not None and judged.refusal.pattern == "repeat_call"
    pinned = judged.refusal.pinned
    assert pinned is None or pinned.arguments.get("path") != "/workspace/tests/test_parse.py"


def test_the_read_just_made_beside_a_new_call_passes() -> None:
    """Alone it is refused; proposed with a new search in the same reply (Claude Code's parallel
    calls, corpus: GLM-4.7-Flash on beeware__briefcase-2212) the reply takes a new step too, and a
    refusal would take that away with it."""
    rules = _rules([test_run(), view()])
    grep = orjson.dumps(_grep()[1]).decode()
    alone = judge(ReplyView("", (VIEW[0],), (orjson.dumps(VIEW[1]).decode(),)), rules)
    beside = judge(ReplyView("", (VIEW[0], "execute_bash"), (orjson.dumps(VIEW[1]).decode(), grep)), rules)
    assert alone.refusal is not None and alone.refusal.pattern == "repeat_call"
    assert beside.refusal is None


def test_a_command_read_by_its_filter_is_no_read_to_refuse() -> None:
    """`pip install -e . | tail -2` installs (its `tail` filters the install's output); `pip install
    -e . && cat setup.py` is classified a read by its `cat`, and installs too: run again, either
    installs again, never refused as the read just made. `cat f | grep x` reads, and is."""
    install = _install()
    assert judge(ReplyView("", (install[0],), (orjson.dumps(install[1]).decode(),)), _rules([install])).refusal is None
    then_read = bash("cd /workspace && pip install -e . && cat setup.py", "Successfully installed parse-0.1\nsetup()")
    proposed = ReplyView("", (then_read[0],), (orjson.dumps(then_read[1]).decode(),))
    assert judge(proposed, _rules([then_read])).refusal is None
    look = bash("cat /workspace/src/parse.py | grep -n return", "3:    return int(a) + int(b) + 1")
    refused = judge(ReplyView("", (look[0],), (orjson.dumps(look[1]).decode(),)), _rules([look])).refusal
    assert refused is not None and refused.pattern == "repeat_call"


def test_the_read_just_made_after_a_person_s_word_passes() -> None:
    """A person's message after the read may have changed what it shows: not refused."""
    proposed = ReplyView("", (VIEW[0],), (orjson.dumps(VIEW[1]).decode(),))
    for chat, refused in (
        (Chat().turn(view()), True),
        (Chat().turn(view()).user("I edited parse.py myself; have another look at it."), False),
    ):
        planned = analyse(engine(), chat.bytes())
        assert planned is not None
        assert (judge(proposed, planned.decision.reply).refusal is not None) is refused
