"""The reply rules the plan arms for each request, and how a reply is judged by them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from chat import OPENHANDS_TOOLS, Chat, bash, edit, test_run, view
from scenario_loader import acting, analyse, engine

from proxy.engine.plan.reply import Gate, Hold, ReplyRules, ReplyView, holding, judge
from proxy.engine.text.nudges import asks_for_a_call
from proxy.engine.text.salvage import OfferedTool
from proxy.settings.policy import Policy

FINISH = {"type": "function", "function": {"name": "finish", "parameters": {"type": "object"}}}
CALL = '{"name": "execute_bash", "arguments": {"command": "ls"}}'


def rules_for(chat: Chat, policy: Policy | None = None, **extra: Any) -> ReplyRules:
    planned = analyse(engine(policy), chat.bytes(**extra))
    assert planned is not None
    return planned.decision.reply


def test_mid_task_with_nothing_failing_arms_the_action_gate_for_empty_replies_only() -> None:
    rules = rules_for(Chat().turn(bash("ls /workspace", "src\ntests")).turn(edit()))
    assert set(rules.gates) == {Gate.ACTION}
    assert (rules.empty_gate, rules.prose_gate) == (Gate.ACTION, None)
    assert rules.offered.keys() == {"execute_bash", "str_replace_editor"}


def test_after_a_read_the_block_rung_is_armed_for_that_read_again() -> None:
    """`repeat_call` may refuse the read just made: the rung is armed after a read, not after an edit."""
    assert set(rules_for(Chat().turn(view())).gates) == {Gate.ACTION, Gate.BLOCK}
    assert Gate.BLOCK not in rules_for(Chat().turn(view()).turn(edit())).gates


def test_a_person_waiting_for_an_answer_holds_only_a_reply_meant_as_a_call() -> None:
    """The transcript ends with the person's message: a text answer, or nothing, is what is
    wanted; only a reply written as a call that is none is held (by the action gate)."""
    rules = rules_for(Chat())
    assert (rules.empty_gate, rules.prose_gate, rules.miscall_gate) == (None, None, Gate.ACTION)
    assert judge(ReplyView("Here is the answer."), rules).gate is None
    assert judge(ReplyView(""), rules).gate is None
    assert judge(ReplyView('{"name": "python", "arguments": {}}'), rules).gate is Gate.ACTION


STUCK_ACTS = acting("stuck_same_diagnostic")
"""The failure model's own pattern acting: its step is what the gates ask for (in shadow, as it
ships, they do not: `test_shadow_gates.py`)."""


def test_a_live_failure_arms_the_finish_gate_for_prose_and_finish_calls() -> None:
    rules = rules_for(Chat(tools=[*OPENHANDS_TOOLS, FINISH]).turn(test_run()), STUCK_ACTS)
    assert set(rules.gates) == {Gate.ACTION, Gate.FINISH, Gate.BLOCK}  # block: the same check again at once
    assert rules.prose_gate is Gate.FINISH and rules.finish_tools == {"finish"}
    finish_edit = rules.gates[Gate.FINISH].edit  # nothing ran since the failure: held to the next step's call
    assert finish_edit.tool_choice == "str_replace_editor" and finish_edit.pinned is not None
    assert finish_edit.pinned["path"] == "/workspace/tests/test_parse.py"
    after_a_command = rules_for(
        Chat(tools=[*OPENHANDS_TOOLS, FINISH]).turn(test_run()).turn(bash("cd /workspace && pip install -e .", "ok")),
        STUCK_ACTS,
    )
    finish_edit = after_a_command.gates[Gate.FINISH].edit  # any call but the finish
    assert finish_edit.require_call and finish_edit.tools == ["execute_bash", "str_replace_editor"]


def _finish_directive(chat: Chat) -> str:
    return str(rules_for(chat, STUCK_ACTS).gates[Gate.FINISH].edit.messages[-1]["content"])  # type: ignore[index]


def test_the_finish_directive_right_after_the_failure_names_the_step_before_the_rerun() -> None:
    """Nothing ran since the check failed: "fix the cause, then re-run it: <the run>" got the run
    at once (recovery bench, bank: the model's prose said it would look at the code first)."""
    directive = _finish_directive(Chat().turn(test_run()))
    assert "Next, read the failing test tests/test_parse.py::test_addition" in directive
    assert "Fix the cause, then re-run it" not in directive


def test_the_finish_directive_after_a_command_that_may_have_changed_things_asks_for_the_fix_and_rerun() -> None:
    directive = _finish_directive(Chat().turn(test_run()).turn(bash("cd /workspace && pip install -e .", "ok")))
    assert "Fix the cause, then re-run it: `cd /workspace && python -m pytest tests/test_parse.py`" in directive


SUBMIT = '{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}'
SUBMIT_1X = '{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"}'
SCRIPT_FAILS = bash(
    "cd /testbed && python reproduce_issue.py",
    'Traceback (most recent call last):\n  File "/testbed/reproduce_issue.py", line 9, in <module>\n'
    "    settings.configure(USE_TZ=False, DATABASES=DB)\n"
    "django.core.exceptions.ImproperlyConfigured: TIME_ZONE cannot be set when USE_TZ is False.",
)


@pytest.mark.parametrize(
    ("turns", "arguments", "gate"),
    [
        ([test_run()], SUBMIT, Gate.FINISH),
        ([test_run()], '{"command": "cd /repo && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}', Gate.FINISH),
        ([test_run()], SUBMIT_1X, Gate.FINISH),
        ([test_run()], '{"command": "echo done"}', None),
        ([test_run("@pytest_pass")], SUBMIT, None),
        ([SCRIPT_FAILS], SUBMIT, None),
        ([SCRIPT_FAILS], SUBMIT_1X, None),
    ],
    ids=[
        "the submit command while the check fails",
        "the same, after a cd",
        "mini-swe-agent 1.x's submit (the diff staged and shown after it)",
        "an echo that submits nothing",
        "the submit command once the check passes",
        "the submit command after the agent's own script failed (no test named)",
        "the same, mini-swe-agent 1.x's",
    ],
)
def test_a_shell_command_that_submits_is_a_finish_call(turns: list[Any], arguments: str, gate: Gate | None) -> None:
    """mini-swe-agent 2.x stops with `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` through its one
    tool (recovery bench, leap: submitted with the tests failing, and the finish gate never saw
    it: only a finish tool's name was read)."""
    chat = Chat(tools=OPENHANDS_TOOLS[:1])
    for turn in turns:
        chat.turn(turn)
    rules = rules_for(chat)
    assert judge(ReplyView("", ("execute_bash",), (arguments,)), rules).gate is gate


def test_while_the_finish_gate_is_armed_a_streamed_shell_call_is_held_until_whole() -> None:
    """Whether it submits is known only from its whole command."""
    rules = replace(rules_for(Chat(tools=OPENHANDS_TOOLS[:1]).turn(test_run())), refuse=None)
    assert holding(ReplyView("", ("execute_bash",), ('{"command": "echo COMPL',)), rules) is Hold.REPLY
    calm = replace(rules_for(Chat(tools=OPENHANDS_TOOLS[:1]).turn(view())), refuse=None)
    assert holding(ReplyView("", ("execute_bash",), ('{"command": "echo COMPL',)), calm) is Hold.NONE


def test_an_owed_reverify_arms_the_done_gate_first() -> None:
    rules = rules_for(Chat().turn(test_run()).turn(edit()))
    assert rules.empty_gate is Gate.DONE and rules.prose_gate is Gate.DONE
    assert rules.gates[Gate.DONE].edit.tool_choice == "execute_bash"


def test_an_unanswered_instruction_makes_prose_a_non_answer() -> None:
    """After our nudge the model must act: prose is held by the action gate, grounded in the nudge's
    step, here the block rung's next read (the re-run would be refused), held to its exact call."""
    chat = Chat()
    for out in ("@pytest_addition_a", "@pytest_addition_b", "@pytest_addition_a"):
        chat.turn(test_run(out))
    rules = rules_for(chat, acting("stuck_same_diagnostic"))
    assert rules.prose_gate is Gate.ACTION
    edit_ = rules.gates[Gate.ACTION].edit
    directive = edit_.messages[-1]["content"]  # type: ignore[index]
    assert "Next, read" in directive and "Reply with that tool call only" in directive
    assert edit_.pinned == {"command": "view", "path": "/workspace/tests/test_parse.py", "view_range": [1, 27]}


def test_tool_choice_none_turns_salvage_and_the_tool_gates_off() -> None:
    rules = rules_for(Chat().turn(test_run()), tool_choice="none")
    assert not rules.offered and set(rules.gates) <= {Gate.DONE}


def test_a_named_tool_choice_salvages_only_that_tool() -> None:
    rules = rules_for(Chat().turn(view()), tool_choice={"type": "function", "function": {"name": "str_replace_editor"}})
    assert set(rules.offered) == {"str_replace_editor"}


RULES = ReplyRules(
    offered={"execute_bash": OfferedTool("execute_bash", frozenset({"command"}))},
    finish_tools=frozenset({"finish"}),
    gates={Gate.ACTION: None, Gate.FINISH: None},  # type: ignore[dict-item]
    empty_gate=Gate.ACTION,
    prose_gate=Gate.FINISH,
)


@pytest.mark.parametrize(
    ("view", "gate", "salvaged"),
    [
        (ReplyView("", ("execute_bash",)), None, False),
        (ReplyView(CALL), None, True),
        (ReplyView("", ("finish",)), Gate.FINISH, False),
        (ReplyView(""), Gate.ACTION, False),
        (ReplyView("I am done."), Gate.FINISH, False),
    ],
    ids=["acts", "salvaged", "finishes_on_failure", "empty", "prose"],
)
def test_judge(view: ReplyView, gate: Gate | None, salvaged: bool) -> None:
    judgement = judge(view, RULES)
    assert judgement.gate is gate and bool(judgement.salvaged) is salvaged


@pytest.mark.parametrize(
    ("view", "held"),
    [
        (ReplyView(""), Hold.REPLY),
        (ReplyView('{"name": "execute_'), Hold.REPLY),
        (ReplyView("", (None,)), Hold.REPLY),
        (ReplyView("", ("finish",)), Hold.REPLY),
        (ReplyView("", ("execute_bash",)), Hold.NONE),
    ],
    ids=["nothing_yet", "may_be_a_call", "call_name_unknown", "finish_call", "a_real_call"],
)
def test_holding_a_stream(view: ReplyView, held: Hold) -> None:
    assert holding(view, RULES) is held


def test_prose_is_released_at_once_when_nothing_holds_it() -> None:
    rules = ReplyRules(offered=RULES.offered)
    assert holding(ReplyView("Let me"), rules) is Hold.NONE
    assert not ReplyRules().active


BLOCKING = ReplyRules(
    offered=RULES.offered,
    gates={Gate.ACTION: None, Gate.BLOCK: None},  # type: ignore[dict-item]
    empty_gate=Gate.ACTION,
    refuse=lambda calls: None,
)


@pytest.mark.parametrize(
    ("rules", "view", "held"),
    [
        (BLOCKING, ReplyView(""), Hold.REPLY),
        (BLOCKING, ReplyView("{"), Hold.REPLY),
        (BLOCKING, ReplyView("Let me re-run the tests."), Hold.TEXT_AHEAD),
        (BLOCKING, ReplyView("Let me re-run the tests.", ("execute_bash",)), Hold.REPLY),
        (BLOCKING, ReplyView("", (None,)), Hold.REPLY),
        (replace(BLOCKING, prose_gate=Gate.FINISH), ReplyView("The fix is in."), Hold.TEXT_AHEAD),
        (replace(BLOCKING, prose_gate=Gate.DONE), ReplyView("The fix is in."), Hold.REPLY),
        (replace(BLOCKING, refuse=None, prose_gate=Gate.ACTION), ReplyView("I will look."), Hold.TEXT_AHEAD),
        (replace(BLOCKING, protocol="fenced"), ReplyView("THOUGHT: run it again"), Hold.REPLY),
        (replace(BLOCKING, refuse=None), ReplyView("Let me re-run the tests."), Hold.NONE),
    ],
    ids=[
        "empty_may_yet_be_held_by_the_action_gate",
        "may_become_a_call_written_as_text",
        "text_before_a_call_flows",
        "a_call_is_held_whole",
        "a_call_not_named_yet",
        "prose_a_gate_may_hold_goes_ahead_its_end_held",
        "a_stop_while_a_rerun_is_owed_is_held_whole",
        "prose_the_action_gate_may_hold_goes_ahead",
        "a_call_in_the_agents_text_protocol_is_the_text",
        "block_armed_without_a_judge",
    ],
)
def test_text_goes_ahead_while_only_a_call_or_the_replys_end_can_be_gated(
    rules: ReplyRules, view: ReplyView, held: Hold
) -> None:
    assert holding(view, rules) is held


NAG = "Your last reply had no tool call. Continue with the task: call one of the tools."


def test_a_coding_agent_repeating_its_own_nudge_makes_prose_a_non_answer() -> None:
    """The agent answered two talking replies with the same "call a tool" message: prose is held."""
    chat = Chat().say("Let me think about it.").user(NAG).say("I would look at the code.").user(NAG)
    rules = rules_for(chat)
    assert rules.prose_gate is Gate.ACTION and rules.empty_gate is Gate.ACTION


def test_a_first_follow_up_that_does_not_ask_for_a_call_is_not_yet_a_nag() -> None:
    rules = rules_for(Chat().say("Let me think about it.").user("Go on."))
    assert (rules.empty_gate, rules.prose_gate) == (None, None)


def test_a_first_nudge_that_asks_for_a_call_in_so_many_words_is_a_nag() -> None:
    """Holding the prose that answers it and asking for a call is what the message itself asks."""
    rules = rules_for(Chat().say("Let me think about it.").user(NAG))
    assert (rules.empty_gate, rules.prose_gate) == (Gate.ACTION, Gate.ACTION)


@pytest.mark.parametrize(
    "text",
    [
        NAG,
        "No tool calls found in the response. Every response MUST include at least one tool call.",
        "No tool calls found in your reply. Every reply must call the bash tool with one command.",
        "You must call a function.",
    ],
)
def test_these_ask_for_a_call(text: str) -> None:
    assert asks_for_a_call(text)


@pytest.mark.parametrize(
    "text",
    [
        "continue",
        "Don't call any tools, just explain.",
        "Do not use tools for this one; answer in prose.",
        "What does the function call on line 3 do?",
        "Please explain the tool output.",
        "Your last reply had no tool call. " + "x" * 2000,
    ],
)
def test_these_do_not_ask_for_a_call(text: str) -> None:
    assert not asks_for_a_call(text)


def test_a_chat_apps_repeated_continue_is_never_forced_into_a_call() -> None:
    """Without tools that run, read or edit code, "continue" asks for more text."""
    weather = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    chat = Chat(tools=weather).say("Once upon a time").user("continue").say("there was a fox").user("continue")
    rules = rules_for(chat)
    assert (rules.empty_gate, rules.prose_gate) == (None, None)
    assert judge(ReplyView("and the fox ran off."), rules).gate is None


def _action_directive(chat: Chat) -> str:
    return str(rules_for(chat).gates[Gate.ACTION].edit.messages[-1]["content"])  # type: ignore[index]


def test_the_action_directive_names_the_check_the_task_names() -> None:
    chat = Chat(user="The test suite fails: `python -m pytest -q`. Fix it.")
    chat.say("I think the bug is in the parser.").user(NAG).say("Let me explain the fix.").user(NAG)
    directive = _action_directive(chat)
    assert 'call execute_bash with {"command":"python -m pytest -q"}. Reply with that tool call only.' in directive


def test_the_action_directive_re_runs_a_live_failure_once_something_changed() -> None:
    directive = _action_directive(Chat().turn(test_run()).turn(edit()))
    assert "re-run the failing check" in directive and "python -m pytest tests/test_parse.py" in directive


def test_the_action_directive_does_not_ask_for_a_rerun_the_block_rung_would_refuse() -> None:
    """Right after the failure, nothing changed: the re-run would fail the same way."""
    directive = str(rules_for(Chat().turn(test_run()), STUCK_ACTS).gates[Gate.ACTION].edit.messages[-1]["content"])  # type: ignore[index]
    assert "re-run the failing check" not in directive and "just failed" in directive and "Next, read" in directive


def test_the_action_directive_never_asks_again_for_the_run_that_just_failed() -> None:
    """With the block rung off (no refusal to lean on), right after the failure, nothing changed:
    the next step is what the failure points at, not the same run (recovery bench, stack: asked for
    the run that had just shown a SyntaxError, twice, the model made it twice)."""
    policy = STUCK_ACTS
    policy = policy.model_copy(update={"reply": policy.reply.model_copy(update={"block": False})})
    planned = analyse(engine(policy), Chat().turn(test_run()).bytes())
    assert planned is not None
    directive = str(planned.decision.reply.gates[Gate.ACTION].edit.messages[-1]["content"])  # type: ignore[index]
    assert "re-run the failing check" not in directive
    assert "Next, read the failing test tests/test_parse.py::test_addition" in directive


@pytest.mark.parametrize(
    ("tools", "finish"),
    [
        ([*OPENHANDS_TOOLS, FINISH], "If the task is complete, call finish to finish"),
        (None, "submit it as the task asks"),
    ],
)
def test_the_action_directive_after_a_check_that_just_passed_does_not_ask_for_it_again(
    tools: list[dict[str, Any]] | None, finish: str
) -> None:
    """Recovery bench, stack: the test passed, the model answered empty, the retry asked for the
    check the task names (the one that had just passed), and the model ran it twice more."""
    chat = Chat(user="The test suite fails: `python -m pytest -q`. Fix it.", tools=tools)
    chat.turn(test_run()).turn(edit()).turn(bash("cd /workspace && python -m pytest -q", "@pytest_pass"))
    directive = _action_directive(chat)
    assert "The check passed." in directive and finish in directive
    assert "run the check the task names" not in directive and "the task is not finished" not in directive


@pytest.mark.parametrize(
    "last",
    [view(), test_run("@pytest_pass")],
    ids=["a look", "a narrower check that passed"],
)
def test_the_action_directive_names_the_task_check_when_it_has_not_just_passed(last: tuple[str, Any, str]) -> None:
    chat = Chat(user="The test suite fails: `python -m pytest -q`. Fix it.")
    directive = _action_directive(chat.turn(last))
    assert 'Next, run the check the task names: call execute_bash with {"command":"python -m pytest -q"}' in directive


def test_the_action_directive_falls_back_to_a_look_at_the_working_directory() -> None:
    assert 'call execute_bash with {"command":"ls"}' in _action_directive(Chat().turn(view()))


def test_the_action_retry_leaves_out_the_replies_that_did_not_act_and_their_nudges() -> None:
    """A small model copies what it said before: the retry shows the task, not the two talking
    replies and the agent's two nudges after them (the agent's own transcript is unchanged)."""
    chat = Chat().say("<tools>\n{...}\n</tools>").user(NAG).say("<tools>\n{...}\n</tools>").user(NAG)
    retry = rules_for(chat).gates[Gate.ACTION].edit.messages
    assert retry is not None
    assert [m["role"] for m in retry] == ["system", "user", "system"]
    assert retry[1] == chat.messages[1] and "Your reply did not call a tool" in retry[-1]["content"]


def test_the_action_retry_keeps_calls_and_results_between_talking_replies() -> None:
    chat = Chat().turn(view()).say("I will look.").user(NAG).say("Looking.").user(NAG)
    retry = rules_for(chat).gates[Gate.ACTION].edit.messages
    assert retry is not None
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "tool", "system"]


@pytest.mark.parametrize(
    ("said", "gate"),
    [
        ("Let me look at the diff once more.", Gate.FINISH),
        ("The test failure is unrelated to our changes. Let me look at the diff.", None),
        ("This is a pre-existing issue in the test file, not related to our changes.", None),
        ("The failure is in the code I changed; the patch looks complete though.", Gate.FINISH),
    ],
    ids=[
        "nothing said of the failure: the submit is held",
        "the agent said it is unrelated to its change",
        "the agent said it was there before",
        "the agent's words do not set it aside",
    ],
)
def test_a_failure_the_agent_set_aside_in_its_own_words_does_not_hold_its_submit(said: str, gate: Gate | None) -> None:
    """mini-swe-agent 2.x on SWE-bench (corpus, pvlib-1154 and pydicom-1413): a named test still
    fails, the agent says why it is not its change's, reads its diff, and submits."""
    chat = Chat(tools=OPENHANDS_TOOLS[:1]).turn(test_run())
    chat.turn(bash("git diff", "diff --git a/src/parse.py b/src/parse.py"), text=said)
    assert judge(ReplyView("", ("execute_bash",), (SUBMIT,)), rules_for(chat)).gate is gate


def test_words_said_before_the_failing_run_do_not_set_it_aside() -> None:
    """The statement is read only after the last run that failed: one said before it was about
    another result."""
    chat = Chat(tools=OPENHANDS_TOOLS[:1]).turn(test_run())
    chat.turn(
        bash("git diff", "diff --git a/src/parse.py b/src/parse.py"), text="That failure is unrelated to my change."
    )
    chat.turn(test_run())
    assert judge(ReplyView("", ("execute_bash",), (SUBMIT,)), rules_for(chat)).gate is Gate.FINISH


def _collection_error(raised: str) -> str:
    return (
        "==================================== ERRORS ====================================\n"
        "_____________________ ERROR collecting tests/test_parse.py _____________________\n"
        "ImportError while importing test module '/workspace/tests/test_parse.py'.\n"
        "Traceback:\n"
        "/usr/lib/python3.11/importlib/__init__.py:126: in import_module\n"
        "    return _bootstrap._gcd_import(name[level:], package, level)\n"
        "tests/test_parse.py:1: in <module>\n"
        "    from src.parse import parse\n"
        f"{raised}"
        "=========================== short test summary info ============================\n"
        "ERROR tests/test_parse.py\n"
        "!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!\n"
        "1 error in 0.31s\n"
        "[The command completed with exit code 2.]"
    )


def test_a_finish_while_the_agents_edit_left_the_test_module_unable_to_import_is_held() -> None:
    """Recovery bench (issue 51): an edit broke what the test imports, the next run could not
    collect the test module, and the model's finish went through unheld, twice."""
    broken = _collection_error(
        "E   ImportError: cannot import name 'parse' from 'src.parse' (/workspace/src/parse.py)\n"
    )
    chat = Chat(tools=[*OPENHANDS_TOOLS, FINISH]).turn(test_run()).turn(edit()).turn(test_run(broken))
    assert Gate.FINISH in rules_for(chat).gates


def test_a_finish_while_the_environment_lacks_a_package_the_test_imports_is_not_held() -> None:
    """A module the workspace does not have (not installed): no change of the agent's broke it;
    real agents end with such failures left standing on purpose (the corpus: held on four
    resolved runs of four, each wrongly)."""
    missing = _collection_error("E   ModuleNotFoundError: No module named 'hypothesis'\n")
    chat = Chat(tools=[*OPENHANDS_TOOLS, FINISH]).turn(test_run()).turn(edit()).turn(test_run(missing))
    assert Gate.FINISH not in rules_for(chat).gates
