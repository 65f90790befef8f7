"""The gates the plan arms for a request's reply (see `reply.py` for what they do), each with
the request it sends instead: the transcript as it goes upstream, one directive after it, and
a `tool_choice` when the directive names a tool or a call is required.

    done      a re-run of the failing check is owed           -> re-run it, exactly as before
    finish    the failing check still fails                   -> fix it, then re-run it (no finish tool)
    action    mid-task, or the agent's own nudge unanswered,  -> the exact next call: the unanswered
              or (at any point) a reply meant as a call          instruction's, the failing check,
              that is none                                       the check the task names, or a look

A retry that asks for a call also carries the call's JSON schema (`callschema.py`) while
salvage is on and `reply.constrain_calls` allows it: servers that ignore `tool_choice` still
constrain the reply to a call that way.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from proxy.engine.detectors import BY_NAME, Forced, Levers, Trip
from proxy.engine.detectors.wording import PREFIX, failing_call
from proxy.engine.plan.callschema import call_schema
from proxy.engine.plan.reply import Gate, GatePlan, ReplyRules
from proxy.engine.plan.rules import Rules
from proxy.engine.reading.vocabulary import learn_vocabulary
from proxy.engine.state.conversation import ConversationState, Injection
from proxy.engine.text.exchange import Edit, Translation
from proxy.engine.text.messages import content_text
from proxy.engine.text.salvage import offered_tools
from proxy.settings.kinds import Action, CallKind, Placement

__all__ = ["ASKS_FOR_CALL_CHARS", "Turn", "asks_for_a_call", "forced_schema", "forced_tool", "nagged", "reply_rules"]

_BACKTICKED = re.compile(r"`([^`\n]{2,200})`")


def forced_tool(tail_trips: list[Trip], levers: Levers) -> Forced | None:
    """`force` pins the next call, as the last forcing pattern chooses."""
    forced = [t for t in tail_trips if t.action is Action.FORCE]
    return BY_NAME[forced[-1].pattern].force(forced[-1], levers) if forced else None


def forced_schema(rules: Rules, tools: list[Any] | None, forced: Forced | None) -> dict[str, Any] | None:
    """The schema of the call `force` pins (`callschema.py`), its kind-picking argument narrowed to
    the values of the kind wanted; None when the policy asks for no constrained calls."""
    reply = rules.policy.reply
    if forced is None or not (reply.salvage and reply.constrain_calls):
        return None
    _fixed, arg, values, _shell = rules.classifier.rule_of(forced.tool)
    wanted = [value for value, kind in values.items() if kind is forced.kind]
    narrow = {forced.tool: (arg, wanted)} if arg and wanted else None
    return call_schema(tools, {forced.tool}, narrow)


@dataclass(frozen=True, slots=True)
class Turn:
    """What the reply rules need to know about where the conversation stands."""

    messages: list[Any]
    """The request's messages as they go upstream (instructions placed)."""
    state: ConversationState
    levers: Levers
    mid_task: bool
    """The transcript ends with a tool result, or with an instruction of ours."""
    unanswered: tuple[Injection, ...]
    """Our instructions of this episode that no tool call has followed yet."""
    nagged: bool
    """The agent answered a reply without a call by repeating its own request for one."""
    tail_trips: list[Trip]


_NO_CALL = re.compile(r"\b(?:no|missing|zero)\s+(?:valid\s+)?(?:tool|function)[ _-]?calls?\b", re.I)
_CALL_DEMANDED = re.compile(
    r"\b(?:must|should|please|always)\s+(?:\w+\s+){0,4}?(?:include|contain|make|call|use)\s+"
    r"(?:\w+\s+){0,4}?(?:tools?|functions?|tool[ _-]?calls?)\b",
    re.I,
)
_CALL_REFUSED = re.compile(r"\b(?:don'?t|do\s+not|never|stop|without)\s+(?:\w+\s+){0,3}?(?:call|use|make)", re.I)
ASKS_FOR_CALL_CHARS = 2000
"""Longest user message read for a request for a call (agents' nudges are a sentence or two)."""


def asks_for_a_call(text: str) -> bool:
    """The message says the last reply had no tool call, or that a reply must make one (the
    nudges of mini-swe-agent 2.x, OpenHands-style loops, ...), and does not say not to call."""
    if len(text) > ASKS_FOR_CALL_CHARS or _CALL_REFUSED.search(text):
        return False
    return bool(_NO_CALL.search(text) or _CALL_DEMANDED.search(text))


def nagged(messages: list[Any], levers: Levers) -> bool:
    """A coding agent's own nudge, unanswered: the transcript ends with a user message right after
    an assistant reply without a call, and that message was sent before in it (the agent's
    boilerplate, repeated) or asks for a call in so many words (`asks_for_a_call`: then forcing a
    call is what the message itself asks). Only for agents whose tools run, read or edit code:
    a chat app's repeated "continue" asks for more text, not for a call."""
    if len(messages) < 3 or not levers.vocabulary_runs:
        return False
    last, before = messages[-1], messages[-2]
    if not (isinstance(last, dict) and last.get("role") == "user" and isinstance(before, dict)):
        return False
    if before.get("role") != "assistant" or before.get("tool_calls") or before.get("function_call"):
        return False
    text = content_text(last.get("content")).strip()
    return bool(text) and (
        asks_for_a_call(text)
        or any(
            isinstance(m, dict) and m.get("role") == "user" and content_text(m.get("content")).strip() == text
            for m in messages[:-2]
        )
    )


def _retry(turn: Turn, role: str, text: str, *, messages: list[Any] | None = None, **choice: Any) -> Edit:
    return Edit(
        messages=[*(turn.messages if messages is None else messages), {"role": role, "content": text}], **choice
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
        return _retry(turn, role, text, tool_choice=turn.levers.rerun_tool())

    return GatePlan(build, repair.max_verify_attempts)


def _finish(
    rules: Rules, turn: Turn, role: str, finish_tools: frozenset[str], fit: Callable[[str, str, str], str]
) -> GatePlan | None:
    reply = rules.policy.reply
    failure = turn.state.repair
    if not (failure.live and reply.finish_gate and reply.max_finish_attempts > 0 and turn.levers.offered):
        return None

    def build() -> Edit:
        head = (
            f"{PREFIX} Do not finish yet: the last run of the check still fails "
            f"({failure.same_diagnostic_streak} time(s) in a row):"
        )
        tail = f"Fix the cause, then re-run it: {failing_call(failure)}. Reply with a tool call."
        kept = sorted(turn.levers.offered - finish_tools)
        return _retry(turn, role, fit(head, failure.snippet, tail), require_call=True, tools=kept or None)

    return GatePlan(build, reply.max_finish_attempts)


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


def _next_step(rules: Rules, translation: Translation, turn: Turn) -> str:
    """The exact next call an action-gate retry asks for, grounded in what is known: the
    failing check, else the check the task names, else a look at the working directory."""
    vocabulary = learn_vocabulary(translation.tools, rules.classifier)
    failure = turn.state.repair
    if failure.live:
        return f"Next, re-run the failing check: {failing_call(failure, vocabulary)}. Reply with that tool call only."
    check = _task_check(rules, translation.messages)
    call = vocabulary.run(check) if check else None
    if call is not None:
        return f"Next, run the check the task names: {call.render()}. Reply with that tool call only."
    look = vocabulary.run("ls")
    if look is not None:
        return f"Next, look at the working directory: {look.render()}. Reply with that tool call only."
    return "Reply with your next tool call only."


def _action(rules: Rules, translation: Translation, turn: Turn, role: str) -> GatePlan | None:
    reply = rules.policy.reply
    if not (reply.action_gate and reply.max_action_attempts > 0 and turn.levers.offered):
        return None

    def build() -> Edit:
        forced = None
        if turn.unanswered:
            step = turn.unanswered[-1].text.strip().splitlines()[-1]
            text = f"{PREFIX} Your reply did not call a tool. Do what the instruction above asks. {step}"
            forced = forced_tool([t for t in turn.tail_trips if t.turn == turn.unanswered[-1].turn], turn.levers)
        else:
            step = _next_step(rules, translation, turn)
            text = f"{PREFIX} Your reply did not call a tool, and the task is not finished. {step}"
        messages = _without_idle_replies(turn.messages) if turn.nagged else None
        return _retry(
            turn,
            role,
            text,
            messages=messages,
            leaves_out=messages is not None,
            tool_choice=forced.tool if forced else None,
            require_call=forced is None,
            call_schema=forced_schema(rules, translation.tools, forced),
        )

    return GatePlan(build, reply.max_action_attempts)


def _constrained(plan: GatePlan, tools: list[Any] | None, offered: frozenset[str]) -> GatePlan:
    """The gate's retries, each that asks for a call carrying that call's schema."""

    def build() -> Edit:
        edit = plan.build()
        if edit.call_schema is not None or (edit.tool_choice is None and not edit.require_call):
            return edit
        names = [edit.tool_choice] if edit.tool_choice else edit.tools if edit.tools is not None else offered
        return replace(edit, call_schema=call_schema(tools, names))

    return GatePlan(build, plan.max_attempts)


def reply_rules(rules: Rules, translation: Translation, turn: Turn, fit: Callable[[str, str, str], str]) -> ReplyRules:
    """Salvage and the gates armed for this request's reply."""
    choice = translation.tool_choice
    offered = offered_tools(translation.tools) if choice != "none" else {}
    if choice not in (None, "auto", "none", "required"):
        offered = {name: tool for name, tool in offered.items() if name == choice}
    finish_tools = frozenset(name for name in offered if rules.classifier.classify(name, None).kind is CallKind.FINISH)
    role = "user" if rules.policy.repair.placement is Placement.USER else "system"
    gates = {
        gate: plan
        for gate, plan in (
            (Gate.DONE, _done(rules, turn, role)),
            (Gate.FINISH, _finish(rules, turn, role, finish_tools, fit) if offered else None),
            (Gate.ACTION, _action(rules, translation, turn, role) if offered else None),
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
        classifier=rules.classifier if turn.state.protocol else None,
    )
