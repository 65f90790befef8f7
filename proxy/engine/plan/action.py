"""The action gate: a reply that does not act when it should is asked again for the exact
next call, by whatever lever the server honours (see `gates`).

An agent whose model answered without a call says so in its next message (`text.nudges`);
mid-task, an empty reply, or prose while an instruction of ours is unanswered, is no action
either. The retry asks for the instruction's call, the failing check, the check the task
names, or a look at the working directory; for an agent that writes its calls as text
(`text.protocols`), for one call in its own format.
"""

from __future__ import annotations

import re
from typing import Any

from proxy.engine.detectors import Forced, Levers, Refusal
from proxy.engine.plan.reply import GatePlan, Refuser
from proxy.engine.plan.rules import Rules
from proxy.engine.plan.turn import Turn, forced_schema, forced_tool, held_retry, retry
from proxy.engine.state.conversation import TimelineEntry
from proxy.engine.text.exchange import Edit, Translation
from proxy.engine.text.messages import calls_of, content_text, parse_arguments
from proxy.engine.text.nudges import asks_for_a_call, complains
from proxy.engine.text.protocols import FORMS, written
from proxy.engine.writing.failure_reads import next_step, step_of
from proxy.engine.writing.wording import PREFIX, expected_behaviour, failing_call
from proxy.settings.kinds import CallKind

__all__ = ["UNCHANGED", "action_gate", "nagged", "written_action_gate"]

_BACKTICKED = re.compile(r"`([^`\n]{2,200})`")
_PASSED = "The check passed."
_ANY = "Reply with your next tool call only."
UNCHANGED = (
    "Nothing has changed since the check failed: run again, it fails the same way. Change the code so that it "
    "does what is expected, then re-run the check."
)


def nagged(messages: list[Any], levers: Levers, protocol: str = "") -> bool:
    """A coding agent's own nudge, unanswered: the transcript ends with the agent's complaint
    that the last reply made no (valid) call (`text.nudges`: wherever the bad reply went, kept,
    dropped or asked again), or with a user message right after a reply without a call that was
    sent before in it (the agent's boilerplate, repeated) or asks for a call in so many words.
    Only for agents whose tools run, read or edit code, or that write their calls as text
    (`protocol`): a chat app's repeated "continue" asks for more text, not for a call."""
    if len(messages) < 3 or not (levers.vocabulary_runs or protocol):
        return False
    last, before = messages[-1], messages[-2]
    if not (isinstance(last, dict) and last.get("role") == "user" and isinstance(before, dict)):
        return False
    text = content_text(last.get("content")).strip()
    if complains(text):
        return True
    if before.get("role") != "assistant" or before.get("tool_calls") or before.get("function_call"):
        return False
    if protocol and written(content_text(before.get("content"))) is not None:
        return False  # the reply wrote its call as text: this message is its result
    return bool(text) and (
        asks_for_a_call(text)
        or any(
            isinstance(m, dict) and m.get("role") == "user" and content_text(m.get("content")).strip() == text
            for m in messages[:-2]
        )
    )


def _without_idle_replies(messages: list[Any]) -> list[Any]:
    """The transcript without the model's replies that did not act, each with the agent's nudge
    that answered it (the last user message's text): a small model copies what it said
    before, so a retry that still shows them gets them again. Measured on Qwen2.5-Coder-1.5B
    (llama.cpp), two replies echoing the tools block then the action directive: 2 of 5 calls
    with them in the transcript, 5 of 5 without. Only the retry is sent so; the agent's own
    transcript is never changed."""
    last = messages[-1] if messages else None
    if not (isinstance(last, dict) and last.get("role") == "user"):
        return messages
    nudge = content_text(last.get("content")).strip()
    kept: list[Any] = []
    for message in messages:
        if not isinstance(message, dict):
            kept.append(message)
        elif message.get("role") == "user" and content_text(message.get("content")).strip() == nudge:
            idle = kept and isinstance(kept[-1], dict) and kept[-1].get("role") == "assistant"
            idle = idle and not kept[-1].get("tool_calls") and not kept[-1].get("function_call")
            if idle:
                kept.pop()  # the reply that did not act, and (by not keeping it) its nudge
            else:
                kept.append(message)
        else:
            kept.append(message)
    return kept


def _task_check(rules: Rules, messages: list[Any]) -> str | None:
    """The check the task itself names: a `backticked` command in the first user message that
    the policy classifies as a verification."""
    task = next((m for m in messages if isinstance(m, dict) and m.get("role") == "user"), None)
    if task is None:
        return None
    for command in _BACKTICKED.findall(content_text(task.get("content"))):
        if rules.classifier.classify_command(command).kind is CallKind.VERIFY:
            return str(command).strip()
    return None


def _rerun_refused(turn: Turn, refuse: Refuser | None) -> Refusal | None:
    """Why the block rung would refuse a re-run of the failing check now, if it would: then the
    retry must not ask for that re-run (measured on the recovery bench, openhands style: asked
    for it, the model made it, and the block rung, its one extra generation spent, let it pass)."""
    failure = turn.state.repair
    if refuse is None or not (failure.live and failure.failing_tool):
        return None
    return refuse([(failure.failing_tool, failure.failing_arguments)])


def _pinned(turn: Turn, role: str, refused: Refusal | None, messages: list[Any] | None) -> Edit | None:
    """The retry held to the block rung's next step as its exact call, where it has one (a read in
    the one shell): the instructions above may name a step already taken, and the model copied
    those (recovery bench, bank in `bash` style: the failing test read four times)."""
    if refused is None:
        return None
    text = f"{PREFIX} Your reply did not call a tool, and the task is not finished. {refused.reason}\n{refused.instead}"
    return held_retry(turn, role, text, refused.pinned, messages=messages, leaves_out=messages is not None)


def _last_commands(rules: Rules, messages: list[Any]) -> str:
    """The shell commands of the transcript's last assistant message, one per line."""
    last = next((m for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "assistant"), None)
    commands = (rules.classifier.command(name, parse_arguments(raw)[0]) for _id, name, raw in calls_of(last or {}, 0))
    return "\n".join(c for c in commands if c)


def _after_a_pass(finish_tools: frozenset[str]) -> str:
    """The step after a check that has just passed (the task's own, when it names one): not the
    same check again (recovery bench, stack: asked to run the task's check that had just passed,
    the model ran it twice more)."""
    done = f"call {min(finish_tools)} to finish" if finish_tools else "submit it as the task asks"
    return f"{_PASSED} If the task is complete, {done}; otherwise reply with your next tool call only."


def _next_step(
    rules: Rules, translation: Translation, turn: Turn, refused: Refusal | None, finish_tools: frozenset[str]
) -> str:
    """The exact next call an action-gate retry asks for, grounded in what is known: the
    failing check, unless nothing ran since it failed that could change it (then, or where the
    block rung would refuse the run, the step that comes instead), else the check the task names,
    else a look at the working directory."""
    vocabulary = turn.tools.vocabulary
    failure = turn.state.repair
    if refused is not None:
        return f"{refused.reason}\n{refused.instead}"
    if failure.live and failure.quiet_since_failure:
        # Nothing that could change what the check sees ran since it failed: run again, it fails
        # again (recovery bench, stack: asked twice for the run that had just shown a SyntaxError,
        # the model made it twice). What the failure points at comes next, or a change: the step a
        # pattern names, while it acts. In shadow its words stay out (issue 61): the gate says what
        # it owns, the failure model's evidence (what the failing test expects, and that nothing
        # changed since it failed), and asks for the next call, any. Told only "the check still
        # fails", the model re-ran it at every turn (recovery bench, countdown, both arms).
        if rules.next_step_acts:
            return next_step(step_of(failure), vocabulary)
        said = expected_behaviour(failure)
        return f"{said + ' ' if said else ''}{UNCHANGED} {_ANY}"
    if failure.live:
        return f"Next, re-run the failing check: {failing_call(failure, vocabulary)}. Reply with that tool call only."
    check = _task_check(rules, translation.messages)
    passed = bool(turn.state.timeline) and TimelineEntry(*turn.state.timeline[-1]).outcome == "pass"
    if passed and (check is None or check in _last_commands(rules, translation.messages)):
        return _after_a_pass(finish_tools)
    call = vocabulary.run(check) if check else None
    if call is not None:
        return f"Next, run the check the task names: {call.render()}. Reply with that tool call only."
    look = vocabulary.run("ls")
    if look is not None:
        return f"Next, look at the working directory: {look.render()}. Reply with that tool call only."
    return _ANY


def action_gate(
    rules: Rules,
    translation: Translation,
    turn: Turn,
    role: str,
    refuse: Refuser | None = None,
    finish_tools: frozenset[str] = frozenset(),
) -> GatePlan | None:
    """`refuse`: the block rung's judge, when it is armed (`futility.refuser`); `finish_tools`: the
    offered tools that finish (`ReplyRules.finish_tools`), named after a check that passed."""
    reply = rules.policy.reply
    if not (reply.action_gate and reply.max_action_attempts > 0 and turn.levers.offered):
        return None

    def build() -> Edit:
        refused = _rerun_refused(turn, refuse)
        messages = _without_idle_replies(turn.messages) if turn.nagged else None
        if (pinned := _pinned(turn, role, refused, messages)) is not None:
            return pinned
        if turn.unanswered:
            step = turn.unanswered[-1].text.strip().splitlines()[-1]
            text = f"{PREFIX} Your reply did not call a tool. Do what the instruction above asks. {step}"
            forced = forced_tool([t for t in turn.tail_trips if t.turn == turn.unanswered[-1].turn], turn.levers)
        else:
            forced, step = None, _next_step(rules, translation, turn, refused, finish_tools)
            unfinished = "" if step.startswith(_PASSED) else ", and the task is not finished"
            text = f"{PREFIX} Your reply did not call a tool{unfinished}. {step}"
        if (forced is None or not forced.tool) and refused is not None:
            forced = Forced.of(refused.tool)  # any call but the one the block rung would refuse
        return retry(
            turn,
            role,
            text,
            messages=messages,
            leaves_out=messages is not None,
            tool_choice=forced.tool if forced and forced.tool else None,
            require_call=forced is None or not forced.tool,
            call_schema=forced_schema(rules, translation.tools, forced),
        )

    return GatePlan(build, reply.max_action_attempts)


def written_action_gate(rules: Rules, turn: Turn, role: str) -> GatePlan | None:
    """For an agent that writes its calls as text, once it complained that a reply made none:
    a reply that again writes no call in its format is asked again for exactly one."""
    reply = rules.policy.reply
    form = FORMS.get(turn.state.protocol)
    if not (form and turn.nagged and reply.action_gate and reply.max_action_attempts > 0):
        return None

    def build() -> Edit:
        text = f"{PREFIX} Your reply had no command the agent could run. Reply with {form}."
        return retry(turn, role, text, messages=_without_idle_replies(turn.messages), leaves_out=True)

    return GatePlan(build, reply.max_action_attempts)
