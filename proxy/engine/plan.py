"""The plan: a folded conversation becomes one decision about this request.

    halt        the last turn tripped a halt rung: answer with an incomplete hand-back
    edit        every injection whose turn is present placed after it; `force` pins a tool,
                `restrict` takes one away (None: the original bytes go upstream)
    gate        a re-run of the failing check is owed: what to send if the model tries to stop

Pure: the same state and request always give the same decision, so every rewritten prompt
is a prefix of the next one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from proxy.engine.detectors import BY_NAME, Levers, Trip
from proxy.engine.exchange import Edit, Translation
from proxy.engine.failure import DiagnosticClass
from proxy.engine.handback import Handback
from proxy.engine.remedy import PREFIX, handback_text
from proxy.engine.rewrite import anchor_positions, apply_injections
from proxy.engine.rules import Rules
from proxy.engine.state import ConversationState, Injection, TripOutcome
from proxy.engine.verdict import Verdict
from proxy.settings.kinds import Action, Placement

__all__ = ["Decision", "Effects", "GatePlan", "Request", "decide", "passed"]


@dataclass(frozen=True, slots=True)
class Request:
    """One request as the engine reads it: the transcript in chat terms and whose it is."""

    translation: Translation
    conversation: str
    task: str
    team: str


@dataclass(frozen=True, slots=True)
class GatePlan:
    """The done-gate, owed on this request: what to send instead if the model tries to stop."""

    edit: Edit
    max_attempts: int


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
    gate: GatePlan | None
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


def _offered(tools: list[Any] | None) -> frozenset[str]:
    names: set[str] = set()
    for tool in tools or ():
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.add(function["name"])
    return frozenset(names)


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


def _gate(rules: Rules, messages: list[Any], state: ConversationState, levers: Levers) -> GatePlan | None:
    repair = rules.policy.repair
    if not (state.repair.reverify_owed and repair.done_gate and repair.max_verify_attempts > 0):
        return None
    call = state.repair.failing_command or f"{state.repair.failing_tool} with {state.repair.failing_arguments}"
    text = (
        f"{PREFIX} Do not stop yet: the check that failed has not been re-run since your last edit. "
        f"Run it now, exactly as before: {call}"
    )
    role = "user" if repair.placement is Placement.USER else "system"
    edit = Edit(messages=[*messages, {"role": role, "content": text}], tool_choice=levers.rerun_tool())
    return GatePlan(edit=edit, max_attempts=repair.max_verify_attempts)


def decide(
    rules: Rules, request: Request, state: ConversationState, new_trips: tuple[Trip, ...], effects: Effects
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
        return Decision(request, state, new_trips, handback, None, (), None, effects)
    levers = Levers(
        offered=_offered(request.translation.tools),
        classifier=rules.classifier,
        repair=state.repair,
        verify_tool=rules.policy.repair.verify_tool,
    )
    placed = tuple(i for i in state.injections if i.anchor in positions)
    rewritten = apply_injections(messages, placed, positions) if placed else None
    edit = Edit(messages=rewritten, tool_choice=_tool_choice(tail_trips, levers), tools=_restricted(tail_trips, levers))
    gate = _gate(rules, rewritten or messages, state, levers)
    if edit.empty:
        return Decision(request, state, new_trips, None, None, (), gate, effects)
    return Decision(request, state, new_trips, None, edit, placed, gate, effects)


def passed(before: ConversationState, after: ConversationState) -> bool:
    """A check passed on this request (the failure model moved to a pass)."""
    return after.repair.last_diagnostic_class is DiagnosticClass.PASS and after.repair != before.repair
