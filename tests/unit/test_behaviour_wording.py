"""Every edit remedy asks for the behaviour, never for the check's green (issue 61).

Asked for a line "changed so that the failing check passes", Qwen2.5-Coder-1.5B made the test's
one case come out right and left the code wrong (`count = 0` -> `count = 1`, `score = int(score)`
-> `score = int(score) + 1`): every solve of the project's held-out tasks with the defaults. So
each remedy that asks for an edit states what the failing test expects and what the code gives
instead, where the failure shows them, and asks for the code to do what is expected.

A pair per wording, each pattern acting (most ship in shadow): the failure shows its comparison
(`assert 4 == 3`, `where 4 = parse('1 + 2')`) and the text names the expected and the actual
value; the failure shows none (a `TypeError`) and the text invents none. Neither ever asks for
the check to pass, in any of the ways that says it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from chat import OPENHANDS_TOOLS, Chat, edit, test_run, view
from scenario_loader import acting, analyse, engine

from proxy.dialects import Planned
from proxy.engine.detectors import REGISTRY
from proxy.engine.plan.reply import Gate, ReplyView, judge

GREEN = re.compile(
    r"(failing (check|test)s? pass|(test|check)s? (pass|passes|green)|make (it|the tests?|the checks?) pass"
    r"|pass(es)? the (test|check)|so that (it|they) pass)",
    re.IGNORECASE,
)
"""Every way of asking for the check's green instead of the behaviour."""
NAMED = 'The failing test expects `parse("1 + 2")` to be `3`; it is `4`.'
"""What the failing output (`E assert 4 == 3`, `where 4 = parse('1 + 2')`) and the test's own line,
as the agent read it, say."""
FINISH = {"type": "function", "function": {"name": "finish", "parameters": {"type": "object"}}}
TEST = view(
    "/workspace/tests/test_parse.py",
    "     1\tfrom src.parse import parse\n"
    + "".join(f"{n:6d}\t\n" for n in range(2, 11))
    + '    11\tdef test_addition(tmp_path):\n    12\t    assert parse("1 + 2") == 3\n',
)
CODE = view(
    "/workspace/src/parse.py",
    '     1\tdef parse(s):\n     2\t    """The sum of the two numbers in `s`, written `a + b`."""\n'
    "     3\t    a, b = s.split('+')\n     4\t    return int(a) + int(b) + 1\n",
)
LINE = "    return int(a) + int(b) + 1"
TYPE_ERROR = (
    'tests/test_parse.py F\n\n    def test_addition(tmp_path):\n>       assert parse("1 + 2") == 3\n'
    "E       TypeError: unsupported operand type(s) for +: 'int' and 'str'\n\n"
    "tests/test_parse.py:12: TypeError\nFAILED tests/test_parse.py::test_addition - TypeError: unsupported\n"
    "[Command finished with exit code 1]"
)
ACTING = acting(*(p.name for p in REGISTRY))


def _run(shows: bool) -> tuple[str, dict[str, Any], str]:
    return test_run() if shows else test_run(TYPE_ERROR)


def _planned(chat: Chat) -> Planned:
    planned = analyse(engine(ACTING), chat.bytes())
    assert planned is not None
    return planned


def _refused(chat: Chat, name: str, arguments: dict[str, Any]) -> str:
    rules = _planned(chat).decision.reply
    refusal = judge(ReplyView("", (name,), (orjson.dumps(arguments).decode(),)), rules).refusal
    assert refusal is not None, arguments
    sent = rules.gates[Gate.BLOCK].edit_for(refusal)
    assert sent.pinned is not None  # the re-ask held to the file as it is now
    return str(sent.messages[-1]["content"])


def _read(shows: bool) -> Chat:
    return Chat(tools=[*OPENHANDS_TOOLS, FINISH]).turn(_run(shows)).turn(TEST, CODE)


def stuck_nudge(shows: bool) -> str:
    """`stuck_same_diagnostic`'s remedy, everything read: the held edit of one of the lines."""
    planned = _planned(_read(shows).turn(_run(shows)).turn(_run(shows)))
    return planned.decision.placed[-1].text


def action_retry(shows: bool) -> str:
    """The action gate's retry of an empty reply, nothing run since the failure."""
    return str(_planned(_read(shows).turn(_run(shows))).decision.reply.gates[Gate.ACTION].edit.messages[-1]["content"])


def finish_retry(shows: bool) -> str:
    """The finish gate's retry of a finish, nothing run since the failure."""
    return str(_planned(_read(shows).turn(_run(shows))).decision.reply.gates[Gate.FINISH].edit.messages[-1]["content"])


def rerun_refused(shows: bool) -> str:
    """The block rung's re-ask of the failing check proposed again."""
    return _refused(_read(shows).turn(_run(shows)), "execute_bash", test_run()[1])


def copy_refused(shows: bool) -> str:
    """`pointless_call`'s re-ask of an edit that replaces the line with itself (after one made)."""
    copy = {"command": "str_replace", "path": "/workspace/src/parse.py", "old_str": LINE, "new_str": LINE}
    chat = _read(shows).turn(("str_replace_editor", {**copy, "old_str": "y", "new_str": "y"}, "ERROR: not found"))
    return _refused(chat, "str_replace_editor", copy)


def undo_refused(shows: bool) -> str:
    """`pointless_call`'s re-ask of an edit that undoes the last one (A -> B -> A), the failure the same."""
    changed = f"{LINE}  # checked"
    chat = _read(shows).turn(edit(old=LINE, new=changed)).turn(_run(shows)).turn(code_after(changed))
    chat.turn(("str_replace_editor", {**edit()[1], "old_str": "y", "new_str": "y"}, "ERROR: not found"))
    return _refused(chat, "str_replace_editor", edit(old=changed, new=LINE)[1])


def code_after(line: str) -> tuple[str, dict[str, Any], str]:
    return view("/workspace/src/parse.py", CODE[2].replace(LINE, line))


def not_found_refused(shows: bool) -> str:
    """`repeat_failed_call`'s re-ask of an edit of text the file lacks, sent again."""
    wrong = edit(old="    return int(a) + int(b) - 1", new="    return int(a) + int(b)")
    chat = _read(shows).turn((*wrong[:2], "ERROR:\nNo replacement was performed, old_str did not appear verbatim."))
    return _refused(chat, *wrong[:2])


def redone_refused(shows: bool) -> str:
    """`redone_edit`'s re-ask of an edit made again, its file as that edit left it."""
    made = edit(old="    a, b = s.split('+')", new="    a, b = s.split(' + ')")
    return _refused(_read(shows).turn(made).turn(_run(shows)).turn(TEST), *made[:2])


WORDINGS: dict[str, Callable[[bool], str]] = {
    "stuck_same_diagnostic's held edit": stuck_nudge,
    "the action gate's retry": action_retry,
    "the finish gate's retry": finish_retry,
    "the block rung's re-ask of the failing check": rerun_refused,
    "pointless_call's re-ask of a copy": copy_refused,
    "pointless_call's re-ask of an undo": undo_refused,
    "repeat_failed_call's re-ask of a not-found edit": not_found_refused,
    "redone_edit's re-ask": redone_refused,
}


@pytest.mark.parametrize("wording", list(WORDINGS))
def test_an_edit_remedy_names_what_is_expected_and_what_the_code_gives(wording: str) -> None:
    """Must: the failure shows its comparison, the text names both values, and asks for the
    code to do what is expected; never for the check to pass."""
    text = WORDINGS[wording](True)
    assert NAMED in text, text
    assert "does what is expected" in text or "do what is expected" in text, text
    assert GREEN.search(text) is None, text


@pytest.mark.parametrize("wording", list(WORDINGS))
def test_an_edit_remedy_invents_no_expected_value_where_the_failure_shows_none(wording: str) -> None:
    """Must not: a `TypeError` shows no comparison; nothing is said to be expected, and the
    check's green is not asked for either."""
    text = WORDINGS[wording](False)
    assert "The failing test expects" not in text, text
    assert GREEN.search(text) is None, text


def test_the_green_wording_is_what_the_check_above_finds() -> None:
    """The check itself: the issue's wording, and its equivalents, are found; the behaviour is not."""
    for green in ("that line changed so that the failing check passes", "make the test pass", "the tests pass"):
        assert GREEN.search(green) is not None, green
    assert GREEN.search("so that the code does what is expected, for every input and not only the test's") is None


def _held_new_str(sent: Any) -> str:
    return str(sent.call_schema["properties"]["arguments"]["properties"]["new_str"]["pattern"])


def _as_json_text(text: str) -> str:
    return orjson.dumps(text).decode()[1:-1]  # what the model writes between the quotes, as the grammar reads it


def test_the_held_edit_does_not_offer_an_edit_already_made_on_the_failure() -> None:
    """Issue 61: of 44 answers to the held edit, 8 made the stuck start's own failed edit again and
    8 undid one move with another (`int`/`float`). The lines the failure was already seen with,
    either side of an edit made on it, are no replacement the held edit's schema allows, as a copy
    is not; a line never tried is."""
    tried = f"{LINE}  # checked"
    chat = Chat().turn(test_run()).turn(TEST, CODE).turn(edit(old=LINE, new=tried)).turn(test_run())
    chat.turn(edit(old=tried, new=LINE)).turn(test_run()).turn(CODE).turn(test_run())
    sent = _planned(chat).decision.reply.gates[Gate.ACTION].edit
    assert sent.pinned is not None and sent.pinned["old_str"].values == ("    a, b = s.split('+')", LINE)
    pattern = _held_new_str(sent)
    for made in (LINE, tried, "    a, b = s.split('+')"):  # the line itself, the edit made, the copy of the other
        assert re.fullmatch(pattern, _as_json_text(made)) is None, made
    assert re.fullmatch(pattern, _as_json_text("    return int(a) + int(b)")) is not None


def test_a_refused_redone_edit_is_held_to_the_file_as_it_is_now() -> None:
    """Issue 61: after the block rung refused a redone edit, the model's right change came back
    "old_str not found" twice: the re-ask, in words, left the text to replace to its memory. Held
    now to the lines of the file as the agent last saw them (one of them, to change)."""
    made = edit(old="    a, b = s.split('+')", new="    a, b = s.split(' + ')")
    after = CODE[2].replace("s.split('+')", "s.split(' + ')")
    chat = Chat().turn(test_run()).turn(TEST, CODE).turn(made).turn(test_run())
    chat.turn(view("/workspace/src/parse.py", after))
    rules = _planned(chat).decision.reply
    refusal = judge(ReplyView("", (made[0],), (orjson.dumps(made[1]).decode(),)), rules).refusal
    assert refusal is not None and refusal.pattern == "redone_edit"
    sent = rules.gates[Gate.BLOCK].edit_for(refusal)
    assert sent.pinned is not None and sent.pinned["old_str"].values == ("    a, b = s.split(' + ')", LINE)
    assert NAMED in str(sent.messages[-1]["content"])
