"""The gates the plan arms for a request's reply (see `reply.py` for what they do), each with
the request it sends instead: the transcript as it goes upstream, one directive after it, and
a `tool_choice` when the directive names a tool or a call is required.

    done      a re-run of the failing check is owed           -> re-run it, exactly as before
    finish    a failing test its runner names still fails     -> fix it, then re-run it (no finish tool); the
                                                                 next step first (its exact call, where it
                                                                 has one), when nothing ran since it failed
    action    mid-task, or the agent's own nudge unanswered,  -> the exact next call: the unanswered
              or (at any point) a reply meant as a call          instruction's, the failing check (or
              that is none                                       the block rung's next step, where it
                                                                 would refuse that), the check the
                                                                 task names, or a look

A retry that asks for a call also carries the call's JSON schema (`callschema.py`) while
salvage is on and `reply.constrain_calls` allows it: servers that ignore `tool_choice` still
constrain the reply to a call that way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from proxy.engine.outputs.evidence import Pointers, in_library
from proxy.engine.plan.action import UNCHANGED, action_gate, written_action_gate
from proxy.engine.plan.callschema import call_schema
from proxy.engine.plan.futility import block_gate, refuser
from proxy.engine.plan.reply import Gate, GatePlan, Refuser, ReplyRules
from proxy.engine.plan.rules import Rules
from proxy.engine.plan.turn import Turn, held_retry, retry
from proxy.engine.reading.workspace import same_file
from proxy.engine.text.dismissals import dismisses
from proxy.engine.text.exchange import Edit, Translation
from proxy.engine.text.messages import content_text
from proxy.engine.text.salvage import offered_tools
from proxy.engine.writing.failure_reads import expected, next_call, next_step, quoted_failure, step_of
from proxy.engine.writing.wording import PREFIX, expected_behaviour, failing_call
from proxy.settings.kinds import CallKind, Placement

__all__ = ["broke_on_import", "reply_rules"]

_DISMISSAL_MESSAGES = 60
"""How far back the agent's word on a failure is looked for (its own calls and their results)."""


def _done(rules: Rules, turn: Turn, role: str) -> GatePlan | None:
    repair = rules.policy.repair
    failure = turn.state.repair
    if not (failure.reverify_owed and repair.done_gate and repair.max_verify_attempts > 0):
        return None

    def build() -> Edit:
        call = failure.failing_command or f"{failure.failing_tool} with {failure.failing_arguments}"
        text = (
            f"{PREFIX} Do not stop yet: the check that failed has not been re-run since your last edit. "
            f"Run it now, exactly as before: {call}"
        )
        return retry(turn, role, text, tool_choice=turn.levers.rerun_tool())

    return GatePlan(build, repair.max_verify_attempts)


def _finish(
    rules: Rules,
    turn: Turn,
    role: str,
    finish_tools: frozenset[str],
    fit: Callable[[str, str, str], str],
    judge: Refuser | None = None,
) -> GatePlan | None:
    reply = rules.policy.reply
    failure = turn.state.repair
    if not (failure.live and reply.finish_gate and reply.max_finish_attempts > 0 and turn.levers.offered):
        return None
    if failure.predates:
        return None  # a failure there without the agent's work is no reason to hold its finish
    if failure.pointers.test_id is None and not broke_on_import(failure.pointers):
        # A failing test its runner names holds a finish, and so does a test module that no
        # longer imports the workspace's code (a collection error, an import error: the edit
        # broke what the test imports; recovery bench, issue 51: two such finishes went through
        # unheld). Real agents end with a failure of another kind left standing on purpose and
        # rightly: their own script showing the error the task asked for (OpenHands:
        # `reproduce_tz_issue.py` run under settings Django rejects by design), a harness error,
        # a scratch test of their own broken by the environment (mini-swe-agent 2.x on SWE-bench,
        # corpus: held on four resolved runs of four, each wrongly).
        return None
    if _dismissed_since(turn.messages, failure.failing_arguments, failure.failing_command):
        return None

    def build() -> Edit:
        head = (
            f"{PREFIX} Do not finish yet: the last run of the check still fails "
            f"({failure.same_diagnostic_streak} time(s) in a row):"
        )
        tail = f"Fix the cause, then re-run it: {failing_call(failure)}. Reply with a tool call."
        snippet = failure.snippet
        kept = sorted(turn.levers.offered - finish_tools) or None
        if failure.quiet_since_failure and rules.next_step_acts:
            # Nothing that could change it ran since it failed: the call to name is what comes
            # before the re-run (recovery bench, bank: the model's prose said it would look at the
            # code; told "fix the cause, then re-run it: python -m pytest", it re-ran at once): the
            # step a pattern names, while it acts (in shadow, its words stay out: issue 61).
            vocabulary = turn.tools.vocabulary
            found = step_of(failure)
            tail = next_step(found, vocabulary, stated=False)
            snippet = quoted_failure(found) or expected(found)
            # Held to that step's call, as the block rung's re-ask is: asked in words for the
            # change, the model sent a line-break `sed` of the test file, then one with its quote
            # left open (recovery bench, stack in `bash` style, seed 1).
            step = next_call(found, vocabulary, failure.failing_tool)
            if (held := held_retry(turn, role, fit(head, snippet, tail), step, tools=kept)) is not None:
                return held
        elif failure.quiet_since_failure:
            # In shadow: the re-run is the block rung's own to refuse (its result is known), so the
            # retry asks for what that refusal names, held as the rung's re-ask is (as the action
            # gate's does); told "fix the cause, then re-run it: python -m pytest", the 1.5B model
            # re-ran it at once (recovery bench, pages seed 1 at 0e10cef). Else the gate's own words.
            refused = judge([(failure.failing_tool, failure.failing_arguments)]) if judge is not None else None
            if refused is not None:
                text = f"{PREFIX} Do not finish yet: the check still fails. {refused.reason}\n{refused.instead}"
                if (held := held_retry(turn, role, text, refused.pinned, tools=kept)) is not None:
                    return held
                return retry(turn, role, text, require_call=True, tools=kept)
            said = expected_behaviour(failure)
            tail = f"{said + ' ' if said else ''}{UNCHANGED} Reply with a tool call."
        return retry(turn, role, fit(head, snippet, tail), require_call=True, tools=kept)

    return GatePlan(build, reply.max_finish_attempts)


def broke_on_import(pointers: Pointers) -> bool:
    """A test module did not import because the workspace code it imports broke: it names the
    module, and the failure is in a project file that is not that module (the code's own line, a
    `SyntaxError` in it, the file a name could not be imported from: `evidence`), never the
    environment's (a package not installed points at the test's own import line)."""
    source, test = pointers.source_file, pointers.test_file
    return bool(source and test) and not same_file(source or "", test or "") and not in_library(source or "")


def _dismissed_since(messages: list[Any], arguments: str, command: str) -> bool:
    """Since the last call that ran the failing check, the agent said in its own words that the
    failure is not its change's (`text.dismissals`). Read back from the end, at most
    `_DISMISSAL_MESSAGES` messages; the message that made the call is not read (its text was
    written before the failure was seen)."""
    for message in reversed(messages[-_DISMISSAL_MESSAGES:]):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        text = content_text(message.get("content"))
        calls = message.get("tool_calls") or []
        made = any(isinstance(c, dict) and (c.get("function") or {}).get("arguments") == arguments for c in calls)
        if made or (command and command in text):
            return False
        if dismisses(text):
            return True
    return False


def _constrained(plan: GatePlan, tools: list[Any] | None, offered: frozenset[str]) -> GatePlan:
    """The gate's retries, each that asks for a call carrying that call's schema."""

    def constrain(edit: Edit) -> Edit:
        if edit.call_schema is not None or (edit.tool_choice is None and not edit.require_call):
            return edit
        names = [edit.tool_choice] if edit.tool_choice else edit.tools if edit.tools is not None else offered
        pinned = {edit.tool_choice: edit.pinned} if edit.tool_choice and edit.pinned else None
        return replace(edit, call_schema=call_schema(tools, names, pinned=pinned))

    refused = plan.refused
    return GatePlan(
        lambda: constrain(plan.build()),
        plan.max_attempts,
        None if refused is None else lambda refusal: constrain(refused(refusal)),
    )


def reply_rules(rules: Rules, translation: Translation, turn: Turn, fit: Callable[[str, str, str], str]) -> ReplyRules:
    """Salvage and the gates armed for this request's reply."""
    choice = translation.tool_choice
    offered = offered_tools(translation.tools) if choice != "none" else {}
    if choice not in (None, "auto", "none", "required"):
        offered = {name: tool for name, tool in offered.items() if name == choice}
    finish_tools = frozenset(name for name in offered if rules.classifier.classify(name, None).kind is CallKind.FINISH)
    role = "user" if rules.policy.repair.placement is Placement.USER else "system"
    calls = bool(offered) or turn.calls_as_text
    # What the acting patterns (and the gate's own evidence) would refuse: the action gate does not
    # ask for it, whether or not the rung is on (`[reply] block = false` turns off the rung alone,
    # not the call the action gate's retry is held to: issue 61).
    judge = refuser(rules, turn, translation, fit) if calls else None
    refuse = judge if rules.policy.reply.block else None
    action = (
        action_gate(rules, translation, turn, role, judge, finish_tools)
        if offered
        else written_action_gate(rules, turn, role)
    )
    gates = {
        gate: plan
        for gate, plan in (
            (Gate.BLOCK, block_gate(rules, turn, role) if refuse is not None else None),
            (Gate.DONE, _done(rules, turn, role)),
            (Gate.FINISH, _finish(rules, turn, role, finish_tools, fit, judge) if offered else None),
            (Gate.ACTION, action),
        )
        if plan is not None
    }
    if rules.policy.reply.salvage and rules.policy.reply.constrain_calls:
        gates = {gate: _constrained(plan, translation.tools, frozenset(offered)) for gate, plan in gates.items()}
    acting = Gate.ACTION in gates and (turn.mid_task or turn.nagged)
    empty = Gate.DONE if Gate.DONE in gates else Gate.ACTION if acting else None
    prose = Gate.DONE if Gate.DONE in gates else None
    if prose is None and acting and (turn.unanswered or turn.nagged):
        prose = Gate.ACTION
    if prose is None and Gate.FINISH in gates:
        prose = Gate.FINISH
    return ReplyRules(
        offered=offered if rules.policy.reply.salvage else {},
        finish_tools=finish_tools,
        gates=gates,
        empty_gate=empty,
        prose_gate=prose,
        miscall_gate=Gate.ACTION if Gate.ACTION in gates else None,
        protocol=turn.state.protocol,
        classifier=rules.classifier,
        refuse=refuse,
    )
