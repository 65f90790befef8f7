"""Shadow means shadow, in the gates too (issue 61), and the block-off arm changes the rung alone.

A pattern in shadow trips, logs and counts, and changes nothing: the gates' words and the block
rung's refusals come only from patterns that act, or from evidence the gate owns and is measured
for as its own (the block rung's no-op edits and redone edits: `Refusal.owned`). Seen on the project's held-out
tasks with `stuck_same_diagnostic` in shadow (its default): the action gate's re-ask still carried
its next step ("Do not edit ranges.py again yet. Next, read the failing test ..."), and
`redone_edit`, in shadow, refused a redone edit (since owned by the rung: what it claims is read
off the transcript, the edit made again on its file as it left it).

And `[reply] block = false` (the recovery bench's block-off arm) turns off the rung, nothing
else: the action gate's re-ask still pins the call it pins with the rung on (it had stopped, and
the model sent `execute_bash "str_replace"`, re-ran the unchanged check, edited text that was
not in the file).

Each a pair: must (the pattern acting) and must not (in shadow, as it ships).
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from typing import Any

import orjson
import pytest
from chat import OPENHANDS_TOOLS, Chat, edit, test_run, view
from scenario_loader import acting, analyse, engine

from proxy.engine.plan.reply import Gate, ReplyRules, ReplyView, judge
from proxy.settings.policy import Policy, default_policy, policy_from_mapping

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from recovery import POLICIES

FINISH = {"type": "function", "function": {"name": "finish", "parameters": {"type": "object"}}}
STUCK = "stuck_same_diagnostic"


def _rules(chat: Chat, policy: Policy | None = None) -> ReplyRules:
    planned = analyse(engine(policy), chat.bytes())
    assert planned is not None
    return planned.decision.reply


def _stuck() -> Chat:
    """The same failure three times, two edits of the code between that changed nothing."""
    chat = Chat(tools=[*OPENHANDS_TOOLS, FINISH]).turn(test_run())
    return chat.turn(edit()).turn(test_run()).turn(edit(old="a + b", new="a + b + 0")).turn(test_run())


def _said(rules: ReplyRules, gate: Gate) -> tuple[str, Any, Any]:
    sent = rules.gates[gate].edit
    return str(sent.messages[-1]["content"]), sent.tool_choice, sent.pinned


def _no_block(policy: Policy) -> Policy:
    return policy.model_copy(update={"reply": policy.reply.model_copy(update={"block": False})})


def _twice() -> Chat:
    """The same failure twice, an edit between that changed nothing, nothing since."""
    return Chat(tools=[*OPENHANDS_TOOLS, FINISH]).turn(test_run()).turn(edit()).turn(test_run())


def _edited() -> Chat:
    """A failure, then an edit that landed: the re-run is the step, and nobody refuses it."""
    return Chat(tools=[*OPENHANDS_TOOLS, FINISH]).turn(test_run()).turn(edit())


@pytest.mark.parametrize("gate", [Gate.ACTION, Gate.FINISH])
def test_a_gate_s_retry_carries_the_stuck_step_only_while_the_pattern_acts(gate: Gate) -> None:
    """Acting, at the third same failure; in shadow, as it ships, not after an edit landed. In
    shadow with nothing changed since the failure: the next test (the rung's own step)."""
    text, choice, pinned = _said(_rules(_stuck(), acting(STUCK)), gate)
    assert "Do not edit parse.py again yet. Next, read the failing test" in text  # must: acting
    assert choice == "str_replace_editor" and pinned is not None and pinned["command"] == "view"
    for chat in (_edited(),):
        text, choice, pinned = _said(_rules(chat), gate)  # must not: in shadow, as it ships
        assert "Do not edit" not in text and "Next, read" not in text, text
        assert pinned is None and choice != "str_replace_editor"


@pytest.mark.parametrize("gate", [Gate.ACTION, Gate.FINISH])
@pytest.mark.parametrize(("chat", "times"), [(_twice(), 2), (_stuck(), 3)], ids=["second", "third"])
def test_in_shadow_a_gate_asks_for_the_step_the_rungs_own_refusal_names(chat: Chat, times: int, gate: Gate) -> None:
    """Nothing changed since the check failed: the re-run is the block rung's own to refuse (its
    result is known), and a gate's retry asks for what that refusal names instead of the run
    (asked for the run, the model made it: recovery bench, openhands style; told in words what
    the test expects and that a re-run fails the same way, it re-ran it: smoke at 27ea232; the
    finish gate's "fix the cause, then re-run it: `python -m pytest`", re-run at once: pages seed 1
    at 0e10cef)."""
    text, choice, pinned = _said(_rules(chat), gate)
    assert f"failed the same way {times} times in a row, and nothing has changed since" in text
    assert "Next, read the failing test" in text and "re-run the failing check" not in text
    assert choice == "str_replace_editor" and pinned is not None and pinned["command"] == "view"


def test_in_shadow_after_an_edit_landed_the_action_gate_asks_for_the_re_run() -> None:
    text, _choice, _pinned = _said(_rules(_edited()), Gate.ACTION)
    assert "Next, re-run the failing check" in text and "Next, read" not in text


def test_with_the_rung_off_the_finish_gate_still_asks_for_the_step_not_the_re_run() -> None:
    """`[reply] block = false` turns off the rung alone: the finish gate's retry is the same as with
    it on (its step from the judge the gates share), never "re-run it: <the check>"."""
    off = _said(_rules(_stuck(), _no_block(default_policy())), Gate.FINISH)
    assert off == _said(_rules(_stuck()), Gate.FINISH) and "then re-run it:" not in off[0]


@pytest.mark.parametrize("policy", [None, acting(STUCK)], ids=["shadow", "acting"])
def test_the_failing_check_after_an_install_in_the_same_reply_is_not_refused(policy: Policy | None) -> None:
    """Must not: `pip install` then the failing check in one reply: the re-run checks what the
    install changed (corpus, Claude Code with GLM-4.7-Flash, beeware__briefcase-2212 request 47,
    judged wrong when refused). Must: a read, then the failing check, in one reply."""
    chat = Chat(tools=[*OPENHANDS_TOOLS, FINISH]).turn(test_run()).turn(view())
    rerun = orjson.dumps(test_run()[1]).decode()
    install = orjson.dumps({"command": "pip install cookiecutter -q"}).decode()
    read = orjson.dumps({"command": "cat /workspace/parse.py"}).decode()
    rules = _rules(chat, policy)
    assert judge(ReplyView("", ("execute_bash", "execute_bash"), (install, rerun)), rules).refusal is None
    refused = judge(ReplyView("", ("execute_bash", "execute_bash"), (read, rerun)), rules).refusal
    assert refused is not None and refused.pattern == STUCK


def test_the_failing_check_after_three_identical_failures_and_nothing_since_is_the_rungs_own_to_refuse() -> None:
    """Its result is known: the rung refuses it whatever the pattern's mode, and its re-ask names
    the failure's next step as it does while the pattern acts (asked in plain words instead, the
    1.5B model answered with the same run and was handed back at its first turn: recovery bench,
    countdown seed 1 at c307762)."""
    rerun = orjson.dumps(test_run()[1]).decode()
    refusal = judge(ReplyView("", ("execute_bash",), (rerun,)), _rules(_stuck(), acting(STUCK))).refusal
    assert refusal is not None and refusal.pattern == STUCK and "read the failing test" in refusal.instead
    shadow = judge(ReplyView("", ("execute_bash",), (rerun,)), _rules(_stuck())).refusal
    assert shadow is not None and shadow.owned
    assert refusal.halts and not shadow.halts  # the hand-back is the pattern's own rung: not taken in shadow
    assert (shadow.reason, shadow.instead, shadow.tool, shadow.pinned) == (
        refusal.reason,
        refusal.instead,
        refusal.tool,
        refusal.pinned,
    )


def test_the_failing_check_after_one_failure_and_a_read_is_the_rungs_own_but_not_after_an_edit() -> None:
    """Only a read since it failed: the re-run's result is known, refused in shadow too (never a
    hand-back there); an edit landed since: the re-run is the step, refused by neither."""
    chat = Chat(tools=[*OPENHANDS_TOOLS, FINISH]).turn(test_run()).turn(view())
    rerun = orjson.dumps(test_run()[1]).decode()
    assert judge(ReplyView("", ("execute_bash",), (rerun,)), _rules(chat, acting(STUCK))).refusal is not None
    shadow = judge(ReplyView("", ("execute_bash",), (rerun,)), _rules(chat)).refusal
    assert shadow is not None and shadow.owned and not shadow.halts and shadow.times == 1
    for policy in (None, acting(STUCK)):
        assert judge(ReplyView("", ("execute_bash",), (rerun,)), _rules(_edited(), policy)).refusal is None


def _redone(chat: Chat, proposed: dict[str, Any], policy: Policy | None = None) -> Any:
    raw = orjson.dumps(proposed).decode()
    return judge(ReplyView("", ("str_replace_editor",), (raw,)), _rules(chat, policy)).refusal


def test_a_redone_edit_is_the_rung_s_own_evidence_in_shadow_too() -> None:
    """An edit made, a check failed after it, only reads since, the same edit proposed again: its
    file is as it left it, so made again it changes nothing (its text to replace is gone) or makes
    its change twice. Read off the transcript, as a no-op edit is: refused in shadow too (the
    held-out tasks' case, issue 61, now owned and said in the README), never a hand-back in shadow."""
    chat = Chat().turn(edit()).turn(test_run()).turn(view())
    acted = _redone(chat, edit()[1], acting("redone_edit"))
    assert acted is not None and acted.pattern == "redone_edit" and acted.halts
    shadow = _redone(chat, edit()[1])
    assert shadow is not None and shadow.pattern == "redone_edit" and shadow.owned and not shadow.halts


def test_a_redone_edit_is_the_same_edit_however_its_path_is_written() -> None:
    """Recovery bench, trim seed 2: the edit made on `trim.py`, proposed again on the file's
    absolute path (the text it replaces long gone): the same edit."""
    chat = Chat().turn(edit(path="src/parse.py")).turn(test_run()).turn(view())
    assert _redone(chat, edit()[1]) is not None
    other = Chat().turn(edit(path="tests/parse.py")).turn(test_run()).turn(view())
    refused = _redone(other, edit()[1])  # must not: another file of that name (its text is not in the
    assert refused is not None and refused.pattern == "unmatched_edit"  # file as seen whole: that pattern's)


def test_a_redone_edit_outlives_another_edit_of_its_file_that_leaves_its_text_alone() -> None:
    """Recovery bench, pages seed 2: the stuck start's two edits of one file, on different lines;
    the model made the first again at once (`old_str` not found). Must not: a later edit that puts
    the replaced text back, or that changes what the first one wrote."""
    first = edit(old="return a + b + 1", new="return int(a + b + 1)")
    apart = edit(old="a, b = s.split('+')", new="a, b = s.split('+', 1)")
    chat = Chat().turn(first).turn(test_run()).turn(apart).turn(test_run())
    assert _redone(chat, first[1]) is not None
    back = edit(old="return int(a + b + 1)", new="return a + b + 1")
    assert _redone(Chat().turn(first).turn(test_run()).turn(back).turn(test_run()), first[1]) is None
    over = edit(old="int(a + b + 1)", new="int(a) + int(b)")
    assert _redone(Chat().turn(first).turn(test_run()).turn(over).turn(test_run()), first[1]) is None
    again = edit(old="return a + b + 1", new="return (a + b)")  # it landed: the replaced text was back
    assert _redone(Chat().turn(first).turn(test_run()).turn(again).turn(test_run()), first[1]) is None


def test_a_redone_edit_is_not_refused_before_a_check_failed_after_it_nor_once_the_file_shows_its_text() -> None:
    """Must not: no check has run since the edit (it may be the step), or a read since shows the
    text it replaces (something the proxy cannot see put it back)."""
    assert _redone(Chat().turn(edit()).turn(view()), edit()[1]) is None
    shown = view(content="def parse(s):\n    a, b = s.split('+')\n    return a + b + 1\n")
    assert _redone(Chat().turn(edit()).turn(test_run()).turn(shown), edit()[1]) is None


NOT_FOUND = "ERROR:\nNo replacement was performed, old_str `y` did not appear verbatim in /workspace/src/parse.py."


def test_in_shadow_the_rung_refuses_what_it_owns_a_no_op_edit_and_nothing_else_of_the_pattern() -> None:
    """The block rung's own evidence, measured as its own (`gate:block`, 10 of 10 no-op edits
    refused on the corpus's test part): refused with `pointless_call` in shadow. Its placeholder
    refusal is not the gate's: refused only while the pattern acts."""
    chat = Chat().turn(test_run()).turn(view()).turn(("str_replace_editor", {**edit()[1], "old_str": "y", "new_str": "y"}, NOT_FOUND))  # fmt: skip
    copy = orjson.dumps({**edit()[1], "old_str": "a + b + 1", "new_str": "a + b + 1"}).decode()
    placeholder = orjson.dumps({**edit()[1], "old_str": "<the wrong code>"}).decode()
    shadow, act = _rules(chat), _rules(chat, acting("pointless_call"))
    for rules in (shadow, act):
        refusal = judge(ReplyView("", ("str_replace_editor",), (copy,)), rules).refusal
        assert refusal is not None and refusal.pattern == "pointless_call" and refusal.owned
    in_shadow = judge(ReplyView("", ("str_replace_editor",), (placeholder,)), shadow).refusal
    assert in_shadow is not None and in_shadow.pattern == "unmatched_edit"  # not in the file seen whole
    refusal = judge(ReplyView("", ("str_replace_editor",), (placeholder,)), act).refusal
    assert refusal is not None and not refusal.owned


def test_an_undo_of_the_last_edit_is_refused_as_a_copy_is() -> None:
    """A -> B, the same failure, then B -> A: it puts back the text the failure was seen with
    (issue 61: `int`/`float`, `* factor`/`/ factor`); the gate's own evidence, as a copy. An edit
    that goes on from B (B -> C) is no undo."""
    chat = Chat().turn(test_run()).turn(view()).turn(edit(old="a + b + 1", new="a + b + 2")).turn(test_run())
    chat.turn(("str_replace_editor", {**edit()[1], "old_str": "y", "new_str": "y"}, NOT_FOUND))
    undo = orjson.dumps(edit(old="a + b + 2", new="a + b + 1")[1]).decode()
    onwards = orjson.dumps(edit(old="a + b + 2", new="a + b")[1]).decode()
    refusal = judge(ReplyView("", ("str_replace_editor",), (undo,)), _rules(chat)).refusal
    assert refusal is not None and refusal.owned and "it undoes the last edit" in refusal.reason
    assert judge(ReplyView("", ("str_replace_editor",), (onwards,)), _rules(chat)).refusal is None


def test_with_the_block_rung_off_the_action_gate_still_pins_its_call() -> None:
    """Must: `[reply] block = false` takes the rung away (no block gate, nothing refused) and leaves
    the action gate's retry as it is with the rung on, its call pinned."""
    on, off = _rules(_stuck(), acting(STUCK)), _rules(_stuck(), _no_block(acting(STUCK)))
    assert Gate.BLOCK in on.gates and Gate.BLOCK not in off.gates and off.refuse is None
    assert _said(off, Gate.ACTION) == _said(on, Gate.ACTION)
    assert _said(off, Gate.ACTION)[2] is not None
    rerun = orjson.dumps(test_run()[1]).decode()
    assert judge(ReplyView("", ("execute_bash",), (rerun,)), off).refusal is None  # must not: refused with the rung off


@pytest.mark.parametrize("acts", [False, True], ids=["as it ships", STUCK + " acting"])
def test_the_bench_s_block_off_arm_differs_from_the_defaults_by_the_rung_alone(acts: bool) -> None:
    """`bench/recovery.py`'s `noblock` and `full` policies, on the stuck start: the same gates but
    the block gate, the same action, finish and done retries."""
    patterns = {"patterns": {STUCK: {"mode": "act"}}} if acts else {}
    full = policy_from_mapping({**tomllib.loads(POLICIES["full"]), **patterns}, "full")
    noblock = policy_from_mapping({**tomllib.loads(POLICIES["noblock"]), **patterns}, "noblock")
    assert noblock.model_copy(update={"reply": full.reply}) == full.model_copy(update={"source": noblock.source})
    on, off = _rules(_stuck(), full), _rules(_stuck(), noblock)
    assert set(on.gates) - set(off.gates) <= {Gate.BLOCK} and set(off.gates) <= set(on.gates)
    for gate in set(off.gates):
        assert _said(off, gate) == _said(on, gate), gate
    assert default_policy().reply.block  # the defaults arm is the defaults


def test_the_bench_s_acting_arm_runs_every_pattern_acting() -> None:
    """`bench/recovery.py --arms acting`: the defaults with every pattern acting (the issue's
    'every pattern acting' arm), whose gates carry the stuck step the defaults keep out."""
    from proxy.engine.detectors import REGISTRY
    from proxy.engine.plan.rules import Rules

    policy = policy_from_mapping(tomllib.loads(POLICIES["acting"]), "acting")
    assert all(Rules.of(policy).acts(pattern) for pattern in REGISTRY)
    assert policy.model_copy(update={"patterns": {}, "source": ""}) == default_policy().model_copy(
        update={"source": ""}
    )
    assert "Next, read the failing test" in _said(_rules(_stuck(), policy), Gate.ACTION)[0]


def test_with_no_refusal_to_take_the_step_from_the_finish_gate_says_its_own_evidence() -> None:
    """Nothing changed since the failure and no pattern would refuse the re-run (the rung's own
    refusal turned off by the policy): the gate says what the failing test expects and that a run
    fails the same way, and asks for any call, never "re-run it: <the check>". Must not: after an
    edit landed, the re-run is the step and the gate names it."""
    off = policy_from_mapping({"patterns": {STUCK: {"block": 0, "block_quiet": 0}}}, "tests: no refusal")
    text, choice, pinned = _said(_rules(_stuck(), off), Gate.FINISH)
    assert "Nothing has changed since the check failed" in text and "then re-run it:" not in text
    assert "expects" in text and choice is None and pinned is None
    after_edit = _said(_rules(_edited(), off), Gate.FINISH)[0]
    assert "then re-run it:" in after_edit and "Nothing has changed" not in after_edit


TEST_VIEW = view(path="/workspace/tests/test_parse.py", content="def test_addition():\n    assert parse('1+2') == 3\n")


def _reread(chat: Chat, proposed: tuple[str, dict[str, Any], str]) -> Any:
    raw = orjson.dumps(proposed[1]).decode()
    return judge(ReplyView("", (proposed[0],), (raw,)), _rules(chat)).refusal


def test_a_read_made_again_in_a_run_of_reads_that_already_re_read_is_the_rung_s_own_in_shadow_too() -> None:
    """The failing test, then the test and the code viewed in turn (the thirtieth run's vat seed 5,
    three rounds to the end of its turns): after the first re-read, the code proposed again with
    nothing written since shows what it showed. Refused in shadow (`read_stagnation`'s evidence,
    owned by the rung), never a hand-back, and asked for the failure's next step held to its call:
    both read, the change."""
    chat = Chat().turn(test_run()).turn(TEST_VIEW).turn(view()).turn(TEST_VIEW)
    refusal = _reread(chat, view())
    assert refusal is not None and refusal.pattern == "read_stagnation" and refusal.owned and not refusal.halts
    assert "nothing has been written since" in refusal.reason
    assert refusal.instead.startswith("You have read the failing test and the code it exercises.")
    assert refusal.pinned is not None and refusal.pinned.arguments["command"] == "str_replace"  # the change, held


def test_the_first_re_read_and_a_read_after_a_write_or_a_check_pass() -> None:
    """Must not: the first read made again in a run (an agent may look back once); the same read
    after an edit landed (it shows the change) or after the check ran (the run of reads is over)."""
    assert _reread(Chat().turn(test_run()).turn(TEST_VIEW).turn(view()), TEST_VIEW) is None
    assert _reread(Chat().turn(test_run()).turn(TEST_VIEW).turn(view()).turn(TEST_VIEW).turn(edit()), view()) is None
    assert _reread(Chat().turn(TEST_VIEW).turn(view()).turn(TEST_VIEW).turn(test_run()), view()) is None


def _replace(chat: Chat, old: str) -> Any:
    proposed = ("str_replace_editor", {**edit()[1], "old_str": old, "new_str": "return int(a) + int(b)"}, "")
    return _reread(chat, proposed)


def test_an_editor_s_replace_of_text_its_file_seen_whole_lacks_is_the_rung_s_own_in_shadow_too() -> None:
    """The failing test, the code viewed whole, then a replace whose text is not in it (a sign
    misremembered): the editor would turn it down. Refused in shadow (`unmatched_edit`'s evidence,
    owned by the rung), never a hand-back; the re-ask holds the lines it was meant to match."""
    chat = Chat().turn(test_run()).turn(view())
    refusal = _replace(chat, "    return int(a) - int(b) + 1")
    assert refusal is not None and refusal.pattern == "unmatched_edit" and refusal.owned and not refusal.halts
    assert "is not in /workspace/src/parse.py as you last saw it whole" in refusal.reason
    assert refusal.pinned is not None and refusal.pinned.arguments["path"] == "/workspace/src/parse.py"


def test_a_replace_is_not_refused_where_an_editor_may_find_its_text_or_the_file_was_not_seen_whole() -> None:
    """Must not: the text there but for its whitespace (an editor may match loosely) or its quotes;
    the file seen in part (a range), or changed since it was seen (an edit landed); no failure live."""
    chat = Chat().turn(test_run()).turn(view())
    assert _replace(chat, "return int(a)  +  int(b) + 1") is None
    assert _replace(chat, "a, b = s.split(\u2018+\u2019)") is None
    ranged = ("str_replace_editor", {"command": "view", "path": "/workspace/src/parse.py", "view_range": [1, 2]}, view()[2])  # fmt: skip
    assert _replace(Chat().turn(test_run()).turn(ranged), "return int(a) - int(b) + 1") is None
    assert (
        _replace(Chat().turn(test_run()).turn(view()).turn(edit(old="+ 1", new="+ 2")), "return int(a) - int(b)")
        is None
    )
    assert _replace(Chat().turn(view()), "return int(a) - int(b) + 1") is None
