"""The plan: a folded conversation becomes one decision about this request.

    halt        the last turn tripped a halt rung: answer with an incomplete hand-back
    edit        every injection whose turn is present placed after it; `force` pins a tool,
                `restrict` takes one away (None: the original bytes go upstream)
    reply       what may act on the model's reply: salvage, and the gates armed for this
                request (see `reply.py`), each with what to send instead

Pure: the same state and request always give the same decision, so every rewritten prompt
is a prefix of the next one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from proxy.engine.detectors import BY_NAME, Levers, Trip
from proxy.engine.exchange import Edit, Translation
from proxy.engine.failure import DiagnosticClass
from proxy.engine.handback import Handback
from proxy.engine.remedy import PREFIX, failing_call, handback_text
from proxy.engine.reply import Gate, GatePlan, ReplyRules
from proxy.engine.rewrite import anchor_positions, apply_injections
from proxy.engine.rules import Rules
from proxy.engine.salvage import offered_tools
from proxy.engine.state import ConversationState, Injection, TripOutcome
from proxy.engine.verdict import Verdict
from proxy.settings.kinds import Action, CallKind, Placement

__all__ = ["Decision", "Effects", "Request", "decide", "passed"]

_RESULTS = ("tool", "function")
_NOT_INSTRUCTIONS = frozenset({"memory"})
"""Injection kinds that inform rather than ask for a next step."""


@dataclass(frozen=True, slots=True)
class Request:
    """One request as the engine reads it: the transcript in chat terms and whose it is."""

    translation: Translation
    conversation: str
    task: str
    team: str


@dataclass(frozen=True, slots=True)
class Effects:
    """What this request means beyond itself, for the caller to carry out."""

    record_verdict: bool = False
    """The run stalled on this request: store its verdict for the next run of the task."""
    clear_verdict: bool = False
    """A check passed on this request: a stored verdict for the task is stale."""
    outcomes: tuple[TripOutcome, ...] = ()
    """Aftermaths of earlier watched trips that this request settled."""
    injected_tokens: int = 0
    """Tokens of the instructions written for this request's new trips."""


@dataclass(frozen=True, slots=True)
class Decision:
    request: Request
    state: ConversationState
    new_trips: tuple[Trip, ...]
    halt: Handback | None
    edit: Edit | None
    """What to change in the request; None: send the original bytes."""
    placed: tuple[Injection, ...]
    """Injections placed in this request (old ones re-inserted included)."""
    reply: ReplyRules
    effects: Effects

    def verdict(self, written_at: float) -> Verdict:
        """What this run's stall leaves for the next run of its task."""
        repair = self.state.repair
        return Verdict(
            team=self.request.team,
            task=self.request.task,
            conversation=self.request.conversation,
            failing_class=repair.last_diagnostic_class.value if repair.last_diagnostic_class else "none",
            signature=repair.last_diagnostic_signature or "",
            snippet=repair.snippet if repair.live else "",
            streak=repair.same_diagnostic_streak,
            edits_unchanged=repair.edits_on_failure,
            patterns=tuple(sorted({t.pattern for t in self.state.trips})),
            written_at=written_at,
        )


def _tool_choice(tail_trips: list[Trip], levers: Levers) -> str | None:
    """`force` pins the next call, as the last forcing pattern chooses."""
    forced = [t for t in tail_trips if t.action is Action.FORCE]
    return BY_NAME[forced[-1].pattern].force(forced[-1], levers) if forced else None


def _restricted(tail_trips: list[Trip], levers: Levers) -> list[str] | None:
    """`restrict` takes what each restricting pattern names out of `tools` for this one
    request. Never all of them: a request left with no tools would change what the agent
    can do, not just steer it."""
    restricting = [t for t in tail_trips if t.action is Action.RESTRICT]
    if not restricting or not levers.offered:
        return None
    drop: set[str] = set()
    for trip in restricting:
        drop |= BY_NAME[trip.pattern].restrict(trip, levers)
    kept = sorted(levers.offered - drop)
    return kept if kept and len(kept) < len(levers.offered) else None


@dataclass(frozen=True, slots=True)
class _Turn:
    """What the reply rules need to know about where the conversation stands."""

    messages: list[Any]
    """The request's messages as they go upstream (instructions placed)."""
    state: ConversationState
    levers: Levers
    mid_task: bool
    """The transcript ends with a tool result, or with an instruction of ours."""
    unanswered: tuple[Injection, ...]
    """Our instructions of this episode that no tool call has followed yet."""
    tail_trips: list[Trip]


def _retry(turn: _Turn, role: str, text: str, **choice: Any) -> Edit:
    return Edit(messages=[*turn.messages, {"role": role, "content": text}], **choice)


def _done(rules: Rules, turn: _Turn, role: str) -> GatePlan | None:
    repair = rules.policy.repair
    failure = turn.state.repair
    if not (failure.reverify_owed and repair.done_gate and repair.max_verify_attempts > 0):
        return None
    call = failure.failing_command or f"{failure.failing_tool} with {failure.failing_arguments}"
    text = (
        f"{PREFIX} Do not stop yet: the check that failed has not been re-run since your last edit. "
        f"Run it now, exactly as before: {call}"
    )
    return GatePlan(_retry(turn, role, text, tool_choice=turn.levers.rerun_tool()), repair.max_verify_attempts)


def _finish(
    rules: Rules, turn: _Turn, role: str, finish_tools: frozenset[str], fit: Callable[[str, str, str], str]
) -> GatePlan | None:
    reply = rules.policy.reply
    failure = turn.state.repair
    if not (failure.live and reply.finish_gate and reply.max_finish_attempts > 0 and turn.levers.offered):
        return None
    head = (
        f"{PREFIX} Do not finish yet: the last run of the check still fails "
        f"({failure.same_diagnostic_streak} time(s) in a row):"
    )
    tail = f"Fix the cause, then re-run it: {failing_call(failure)}. Reply with a tool call."
    kept = sorted(turn.levers.offered - finish_tools)
    edit = _retry(turn, role, fit(head, failure.snippet, tail), require_call=True, tools=kept or None)
    return GatePlan(edit, reply.max_finish_attempts)


def _action(rules: Rules, turn: _Turn, role: str) -> GatePlan | None:
    reply = rules.policy.reply
    if not (reply.action_gate and reply.max_action_attempts > 0 and turn.levers.offered and turn.mid_task):
        return None
    if turn.unanswered:
        step = turn.unanswered[-1].text.strip().splitlines()[-1]
        text = f"{PREFIX} Your reply did not call a tool. Do what the instruction above asks. {step}"
        forced = _tool_choice([t for t in turn.tail_trips if t.turn == turn.unanswered[-1].turn], turn.levers)
    else:
        text = (
            f"{PREFIX} Your reply did not call a tool, and the task is not finished. "
            "Continue from the last result: reply with your next tool call only."
        )
        forced = None
    edit = _retry(turn, role, text, tool_choice=forced, require_call=forced is None)
    return GatePlan(edit, reply.max_action_attempts)


def _reply_rules(rules: Rules, request: Request, turn: _Turn, fit: Callable[[str, str, str], str]) -> ReplyRules:
    """Salvage and the gates armed for this request's reply."""
    choice = request.translation.tool_choice
    offered = offered_tools(request.translation.tools) if choice != "none" else {}
    if choice not in (None, "auto", "none", "required"):
        offered = {name: tool for name, tool in offered.items() if name == choice}
    finish_tools = frozenset(name for name in offered if rules.classifier.classify(name, None).kind is CallKind.FINISH)
    role = "user" if rules.policy.repair.placement is Placement.USER else "system"
    gates = {
        gate: plan
        for gate, plan in (
            (Gate.DONE, _done(rules, turn, role)),
            (Gate.FINISH, _finish(rules, turn, role, finish_tools, fit) if offered else None),
            (Gate.ACTION, _action(rules, turn, role) if offered else None),
        )
        if plan is not None
    }
    empty = next((g for g in (Gate.DONE, Gate.ACTION) if g in gates), None)
    prose = Gate.DONE if Gate.DONE in gates else None
    if prose is None and Gate.ACTION in gates and turn.unanswered:
        prose = Gate.ACTION
    if prose is None and Gate.FINISH in gates:
        prose = Gate.FINISH
    return ReplyRules(
        offered=offered if rules.policy.reply.salvage else {},
        finish_tools=finish_tools,
        gates=gates,
        empty_gate=empty,
        prose_gate=prose,
        id_seed=f"{request.conversation}:{turn.state.turns}:{len(request.translation.messages)}",
    )


def decide(
    rules: Rules,
    request: Request,
    state: ConversationState,
    new_trips: tuple[Trip, ...],
    effects: Effects,
    fit: Callable[[str, str, str], str],
) -> Decision:
    """The decision for `request` given the conversation's state after folding it."""
    messages = request.translation.messages
    positions = anchor_positions(messages, {i.anchor for i in state.injections} | {state.last_anchor})
    at_tail = positions.get(state.last_anchor) == len(messages) - 1
    tail_trips = [t for t in state.trips if t.anchor == state.last_anchor] if at_tail else []
    halt = next((t for t in tail_trips if t.action is Action.HALT), None)
    if halt is not None:
        handback = Handback(
            text=handback_text(halt, state.repair, state.turns, state.progress.describe()),
            reason=halt.pattern,
            current_failure=state.repair.current_failure(),
            conversation=request.conversation,
            turn=halt.turn,
        )
        return Decision(request, state, new_trips, handback, None, (), ReplyRules(), effects)
    levers = Levers(
        offered=frozenset(offered_tools(request.translation.tools)),
        classifier=rules.classifier,
        repair=state.repair,
        verify_tool=rules.policy.repair.verify_tool,
    )
    placed = tuple(i for i in state.injections if i.anchor in positions)
    rewritten = apply_injections(messages, placed, positions) if placed else None
    edit = Edit(messages=rewritten, tool_choice=_tool_choice(tail_trips, levers), tools=_restricted(tail_trips, levers))
    last = messages[-1] if messages else None
    turn = _Turn(
        messages=rewritten or messages,
        state=state,
        levers=levers,
        mid_task=(isinstance(last, dict) and last.get("role") in _RESULTS)
        or any(positions[i.anchor] == len(messages) - 1 for i in placed),
        unanswered=tuple(
            i
            for i in placed
            if i.pattern not in _NOT_INSTRUCTIONS and i.turn >= state.last_action_turn and i.turn > state.episode_start
        ),
        tail_trips=tail_trips,
    )
    reply = _reply_rules(rules, request, turn, fit)
    if edit.empty:
        return Decision(request, state, new_trips, None, None, (), reply, effects)
    return Decision(request, state, new_trips, None, edit, placed, reply, effects)


def passed(before: ConversationState, after: ConversationState) -> bool:
    """A check passed on this request (the failure model moved to a pass)."""
    return after.repair.last_diagnostic_class is DiagnosticClass.PASS and after.repair != before.repair
