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
from dataclasses import dataclass, replace

from proxy.engine.detectors import Levers, Refusal, Trip, pattern_of
from proxy.engine.plan.action import nagged
from proxy.engine.plan.gates import reply_rules
from proxy.engine.plan.handback import Handback, handback_text, refused_text
from proxy.engine.plan.reply import Gate, ReplyRules
from proxy.engine.plan.rewrite import anchor_positions, apply_injections
from proxy.engine.plan.rules import Rules
from proxy.engine.plan.turn import Turn, forced_schema, forced_tool
from proxy.engine.state.conversation import ConversationState, Injection, TripOutcome
from proxy.engine.state.failure import DiagnosticClass
from proxy.engine.state.verdict import Verdict
from proxy.engine.text.exchange import Edit, Translation
from proxy.engine.text.protocols import FENCED, shell_fence
from proxy.engine.text.salvage import SalvagedCall, offered_tools
from proxy.engine.writing.vocabulary import Learnt
from proxy.settings.kinds import Action, CallKind, FutileAgain

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
    tools: Learnt
    """Its tools, and their vocabulary learnt at most once, when something needs it."""


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
            patterns=tuple(sorted(self.state.tripped)),
            written_at=written_at,
        )


def _restricted(tail_trips: list[Trip], levers: Levers) -> list[str] | None:
    """`restrict` takes what each restricting pattern names out of `tools` for this one
    request. Never all of them: a request left with no tools would change what the agent
    can do, not just steer it."""
    restricting = [t for t in tail_trips if t.action is Action.RESTRICT]
    if not restricting or not levers.offered:
        return None
    drop: set[str] = set()
    for trip in restricting:
        drop |= pattern_of(trip).restrict(trip, levers)
    kept = sorted(levers.offered - drop)
    return kept if kept and len(kept) < len(levers.offered) else None


def _climbed(trip: Trip, levers: Levers, rules: Rules) -> Trip:
    """A `restrict` rung that would take nothing away (the agent's only tool, or none the pattern
    names) gives way to the pattern's next rung: told and still going round, the agent gets what
    comes after, not the same words again."""
    if trip.action is not Action.RESTRICT or _restricted([trip], levers) is not None:
        return trip
    above = rules.options[trip.pattern.name].above(trip.count)
    return trip if above is None or above is Action.RESTRICT else replace(trip, action=above)


HANDBACK_END = "REPAIR_PROXY_HANDBACK"
"""The here-document delimiter that carries a hand-back through `repair.handback_command`."""


def _finish_call(rules: Rules, request: Request, text: str) -> SalvagedCall | None:
    """The hand-back as a call that ends the agent's run: its shell tool running the policy's
    `handback_command` and printing the text; or, when the request requires a call, its finish
    tool with one required argument to carry the text (see `Handback`)."""
    offered = offered_tools(request.translation.tools)
    command = rules.policy.repair.handback_command
    for name in offered if command else ():
        shell = rules.classifier.rule_of(name)[3]
        if shell is not None:
            body = "\n".join(line for line in text.splitlines() if line.strip() != HANDBACK_END)
            return SalvagedCall(name, {shell: f"{command} && cat <<'{HANDBACK_END}'\n{body}\n{HANDBACK_END}"})
    if request.translation.tool_choice != "required":
        return None
    for name, tool in offered.items():
        if rules.classifier.classify(name, None).kind is CallKind.FINISH and len(tool.required) == 1:
            return SalvagedCall(name, {next(iter(tool.required)): text})
    return None


def _written_finish(rules: Rules, request: Request, state: ConversationState, text: str) -> str:
    """The hand-back for an agent that fences its calls in its replies (no tools; mini-swe-agent
    1.x's ```bash, 2.x's text-based model's ```mswea_bash_command): the policy's `handback_command`
    in the agent's own fence, carrying the text, so that the agent runs it and its run ends. In
    prose, such an agent answers it with its format complaint and goes on. Unchanged otherwise."""
    command = rules.policy.repair.handback_command
    if not command or state.protocol != FENCED or offered_tools(request.translation.tools):
        return text
    fence = shell_fence(request.translation.messages)
    if fence is None:
        return text
    # No line of the text may close the block early, nor end the here-document.
    kept = (line.replace(_FENCE, "~~~") for line in text.splitlines() if line.strip() != HANDBACK_END)
    body = "\n".join(kept)
    return f"{_FENCE}{fence}\n{command} && cat <<'{HANDBACK_END}'\n{body}\n{HANDBACK_END}\n{_FENCE}"


_FENCE = "`" * 3


def _handback(rules: Rules, request: Request, state: ConversationState, text: str, reason: str, turn: int) -> Handback:
    finish = _finish_call(rules, request, text)
    return Handback(
        text=text if finish is not None else _written_finish(rules, request, state, text),
        reason=reason,
        current_failure=state.repair.current_failure(),
        conversation=request.conversation,
        turn=turn,
        finish_call=finish,
    )


def _stop(rules: Rules, request: Request, state: ConversationState) -> Callable[[Refusal], Handback]:
    """The stop rung of the block gate: the hand-back for a model that, asked again by a gate,
    proposes a call made in vain before (`reply.futile_again`). Built only when that happens."""

    def stop(refusal: Refusal) -> Handback:
        text = refused_text(refusal, state.repair, state.turns, state.progress.describe())
        return _handback(rules, request, state, text, refusal.pattern, state.turns)

    return stop


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
    tail_trips = [t for t in state.trips if t.anchor == state.last_anchor and not t.shadow] if at_tail else []
    offered = frozenset(offered_tools(request.translation.tools))
    if any(t.action is Action.RESTRICT for t in tail_trips):
        bare = Levers(offered, rules.classifier, state.repair, rules.policy.repair.verify_tool)
        tail_trips = [_climbed(t, bare, rules) for t in tail_trips]
    halt = next((t for t in tail_trips if t.action is Action.HALT), None)
    if halt is not None:
        text = handback_text(halt, state.repair, state.turns, state.progress.describe())
        handback = _handback(rules, request, state, text, halt.pattern.name, halt.turn)
        return Decision(request, state, new_trips, handback, None, (), ReplyRules(), effects)
    forcing = any(t.action is Action.FORCE for t in tail_trips)
    levers = Levers(
        offered=offered,
        classifier=rules.classifier,
        repair=state.repair,
        verify_tool=rules.policy.repair.verify_tool,
        # what a force pins (`stuck_same_diagnostic.force`): learnt only on a request a trip forces
        vocabulary=request.tools.vocabulary if forcing else None,
    )
    placed = tuple(i for i in state.injections if i.anchor in positions)
    rewritten = apply_injections(messages, placed, positions) if placed else None
    forced = forced_tool(tail_trips, levers)
    edit = Edit(
        messages=rewritten,
        tool_choice=forced.tool if forced and forced.tool else None,
        require_call=forced is not None and not forced.tool,
        tools=_restricted(tail_trips, levers),
        call_schema=forced_schema(rules, request.translation.tools, forced),
    )
    unanswered = tuple(
        i
        for i in placed
        if i.pattern not in _NOT_INSTRUCTIONS and i.turn >= state.last_action_turn and i.turn > state.episode_start
    )
    last = messages[-1] if messages else None
    turn = Turn(
        messages=rewritten or messages,
        state=state,
        levers=levers,
        tools=request.tools,
        mid_task=(isinstance(last, dict) and last.get("role") in _RESULTS) or bool(unanswered),
        unanswered=unanswered,
        nagged=nagged(messages, levers, state.protocol),
        tail_trips=tail_trips,
    )
    reply = reply_rules(rules, request.translation, turn, fit)
    if Gate.BLOCK in reply.gates and rules.policy.reply.futile_again is FutileAgain.HANDBACK:
        reply = replace(reply, stop=_stop(rules, request, state))
    if edit.empty:
        return Decision(request, state, new_trips, None, None, (), reply, effects)
    return Decision(request, state, new_trips, None, edit, placed, reply, effects)


def passed(before: ConversationState, after: ConversationState) -> bool:
    """A check passed on this request (the failure model moved to a pass)."""
    return after.repair.last_diagnostic_class is DiagnosticClass.PASS and after.repair != before.repair
