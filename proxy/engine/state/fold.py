"""The conversation fold: new turns of a request folded into the conversation's state.

`fold_turn` is pure: `(state, turn) -> (state, trips)`. `fold_messages` finds the turns a
request carries that the state has not seen (`history.resume`) and folds only those, so the
cost of a request grows with what is new in it, not with the length of the conversation. A
result already folded is never folded again (it is known by its id and its content), so a
cached state plus the new turns equals a fold of the whole history; after an agent compacts
its history the state still carries what the transcript no longer shows; and a request that
departs from the state's history is folded into a state of its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from proxy.engine.outputs.outcome import Outcome
from proxy.engine.reading.canonical import call_identity
from proxy.engine.reading.observe import ObservedTurn, observe
from proxy.engine.state.budget import Budget, BudgetExceeded
from proxy.engine.state.conversation import (
    FOLDED_IDS,
    OUTCOMES_KEPT,
    TIMELINE_TURNS,
    TRIPS_KEPT,
    USER_TEXTS_KEPT,
    WATCH_TURNS,
    ConversationState,
    TimelineRow,
    TripOutcome,
    Watch,
)
from proxy.engine.state.failure import DiagnosticClass, RepairState, fold_failure, is_check
from proxy.engine.state.history import Caught, cursor_after, cursor_at, numbered, resume, unnumbered
from proxy.engine.state.patterns import FoldRules, Trip, TurnFacts, UserFacts
from proxy.engine.state.progress import fold_progress
from proxy.engine.text import nudges, roles
from proxy.engine.text.deadline import checkpoint, in_force
from proxy.engine.text.transcript import Turn, UserMessage, read_turns
from proxy.settings.kinds import Action, Mode

__all__ = ["Caught", "Folding", "fold_messages", "fold_turn", "fold_user"]

_IN_PLACE_OF_A_REPLY = frozenset({"result", "user", "call"})
"""What a user message follows when it stands where the model's reply should be (`UserMessage.after`)."""
_PINNING = frozenset({Action.FORCE, Action.RESTRICT})
"""Rungs that act through the request's tools: for an agent that writes its calls as text, a nudge."""


def fold_turn(state: ConversationState, turn: ObservedTurn, rules: FoldRules) -> tuple[ConversationState, list[Trip]]:
    """Fold one observed turn: the failure model first, then every detector on it."""
    policy = rules.policy
    model_on = policy.repair.failure_model
    after = fold_failure(state.repair, turn, policy.repair.post_edit_reverify) if model_on else state.repair
    progress = fold_progress(state.progress, turn)
    facts = TurnFacts(
        turn=turn,
        before=state.repair,
        after=after,
        failure_model=model_on,
        read_only=state.read_only,
        progress=progress,
    )
    detectors = state.detectors
    trips: list[Trip] = []
    checkpoint(sum(len(c.output) for c in turn.calls))  # the detectors read the turn's outputs again
    for detector in rules.patterns:
        detectors, found = detector.step(detectors, facts, rules.options[detector.name], policy)
        trips.extend(found)
    protocol = turn.turn.protocol if turn.calls else state.protocol
    trips = _shadowed(_as_written(trips, protocol, rules), rules)
    changed = after.last_diagnostic_class is not None and (after != state.repair or after.live)
    outcome = after.last_diagnostic_class.value if changed and after.last_diagnostic_class else "neutral"
    row: TimelineRow = (  # a TimelineEntry's fields, in order
        turn.ordinal,
        tuple(f"{c.kind.value}:{c.call.name}" for c in turn.calls),
        _timeline_outcome(turn, outcome),
        (after.last_diagnostic_signature or "")[:12],
        after.same_diagnostic_streak,
        tuple(f"{t.pattern.name}:{t.action.value}" + (" (shadow)" if t.shadow else "") for t in trips),
    )
    watches, outcomes = _watch(state, after, turn.ordinal, trips, rules)
    return (
        replace(
            state,
            watches=watches,
            outcomes=(*state.outcomes, *outcomes)[-OUTCOMES_KEPT:],
            outcomes_total=state.outcomes_total + len(outcomes),
            repair=after,
            detectors=detectors,
            turns=turn.ordinal,
            folded=(*state.folded, *numbered(state.folded, [call_identity(c.call) for c in turn.calls]))[-FOLDED_IDS:],
            trips=(*state.trips, *trips)[-TRIPS_KEPT:],
            tripped=state.tripped | {t.pattern.name for t in trips if t.acting},
            last_anchor=turn.anchor,
            progress=progress,
            timeline=(*state.timeline, row)[-TIMELINE_TURNS:],
            last_action_turn=turn.ordinal if turn.calls else state.last_action_turn,
            protocol=protocol,
        ),
        trips,
    )


def _as_written(trips: list[Trip], protocol: str, rules: FoldRules) -> list[Trip]:
    """For an agent that writes its calls as text (`protocol`) there is no tool to pin or take
    away: its `force` rungs say what they say, as nudges; a `restrict` rung, which would change
    nothing, gives way to the pattern's next rung (a nudge when there is none)."""
    if not protocol or not any(t.action in _PINNING for t in trips):
        return trips
    return [_written(t, rules) if t.action in _PINNING else t for t in trips]


def _written(trip: Trip, rules: FoldRules) -> Trip:
    if trip.action is Action.RESTRICT:
        above = rules.options[trip.pattern.name].above(trip.count)
        if above is not None and above not in _PINNING:
            return replace(trip, action=above)
    return replace(trip, action=Action.NUDGE)


def _shadowed(trips: list[Trip], rules: FoldRules) -> list[Trip]:
    """Trips of patterns in shadow marked so: they are recorded and counted, and act on nothing."""
    if not any(rules.options[t.pattern.name].mode is Mode.SHADOW for t in trips):
        return trips
    return [replace(t, shadow=True) if rules.options[t.pattern.name].mode is Mode.SHADOW else t for t in trips]


def _timeline_outcome(turn: ObservedTurn, outcome: str) -> str:
    """A turn as the timeline shows it: a check's verdict, an environment problem, or neutral."""
    checks = [c for c in turn.calls if is_check(c)]
    if any(c.outcome is Outcome.ENVIRONMENT for c in checks) and outcome == "neutral":
        return "environment"
    return outcome if checks else "neutral"


def _watch(
    state: ConversationState, after: RepairState, ordinal: int, trips: list[Trip], rules: FoldRules
) -> tuple[tuple[Watch, ...], tuple[TripOutcome, ...]]:
    """Resolve the open watches with this turn's failure model; open new ones for new trips."""
    halted = any(t.acts is Action.HALT for t in trips)
    still: list[Watch] = []
    done: list[TripOutcome] = []
    for w in state.watches:
        if after.last_diagnostic_class is DiagnosticClass.PASS:
            done.append(TripOutcome(w.pattern, w.turn, "cleared"))
        elif after.live and after.last_diagnostic_signature != w.signature:
            done.append(TripOutcome(w.pattern, w.turn, "changed"))
        elif halted:
            done.append(TripOutcome(w.pattern, w.turn, "handed_back"))
        elif ordinal - w.turn >= WATCH_TURNS:
            done.append(TripOutcome(w.pattern, w.turn, "unchanged"))
        else:
            still.append(w)
    for trip in trips:
        if trip.pattern.watched and trip.acts is not Action.HALT and trip.action is not Action.OBSERVE:
            still.append(Watch(trip.pattern.name, trip.turn, after.last_diagnostic_signature or ""))
    return tuple(still), tuple(done)


def fold_user(state: ConversationState, message: UserMessage, rules: FoldRules) -> tuple[ConversationState, list[Trip]]:
    """A user message between turns. A person's new message (text not sent before) starts a new
    episode for the episodic detectors; repeated boilerplate and the agent's own nudges
    (`text.nudges`: "no tool call found", "please continue") do not. The failure model is never
    reset by user messages. Patterns that watch user messages fold it (the agent's complaints
    repeated are a model that keeps failing to act)."""
    words = nudges.boilerplate(message.text)
    digest = hashlib.blake2b(words.encode("utf-8", "replace"), digest_size=16).hexdigest()
    repeated = digest in state.user_texts
    complaint = nudges.complains(message.text)
    nudge = complaint or nudges.continues(message.text)
    refused = complaint or (state.turns > 0 and message.after in _IN_PLACE_OF_A_REPLY)
    facts = UserFacts(
        message.text,
        message.message_index,
        state.turns,
        repeated,
        nudge,
        complaint,
        state.protocol,
        message.answered,
        refused,
        message.after,
        acted=state.last_action_turn > 0,
    )
    detectors = state.detectors
    if not repeated and not nudge:
        detectors = detectors.reset(rules.episodic)
    trips: list[Trip] = []
    for pattern in rules.patterns:
        detectors, found = pattern.user_step(detectors, facts, rules.options[pattern.name], rules.policy)
        trips.extend(found)
    trips = _shadowed(_as_written(trips, state.protocol, rules), rules)
    if repeated and not trips and detectors is state.detectors:
        return state, []
    return replace(
        state,
        detectors=detectors,
        user_texts=state.user_texts if repeated else (*state.user_texts, digest)[-USER_TEXTS_KEPT:],
        episode_start=state.episode_start if repeated or nudge else state.turns,
        trips=(*state.trips, *trips)[-TRIPS_KEPT:],
        tripped=state.tripped | {t.pattern.name for t in trips if t.acting},
        last_anchor=trips[-1].anchor if trips else state.last_anchor,
    ), trips


class Folding:
    """A fold of a request's unseen turns, one event (a turn or a user message) a `step`: run to its end
    within a budget (`run`), or a few steps at a time beside the traffic (`http.runtime.catchup`).
    Where reading starts (`unread`) is known before anything is read. A step is whole or not at all."""

    def __init__(self, state: ConversationState, messages: Sequence[Any], rules: FoldRules) -> None:
        self.where = resume(state, messages)
        self.state = ConversationState() if self.where.fresh else state  # fresh: another branch of the task
        self.messages, self.rules = messages, rules
        self.trips: list[tuple[Trip, RepairState]] = []
        self.latest: list[Trip] = []
        self.before_latest = self.state
        self._turns: list[Turn] | None = None  # read at the first step
        self._events: list[Turn | UserMessage] = []
        self._next = 0

    @property
    def unread(self) -> int:
        return len(self.messages) - self.where.start

    @property
    def done(self) -> bool:
        return self._turns is not None and self._next >= len(self._events)

    def step(self) -> None:
        if self._turns is None:
            if self.state.turns == 0 and self.where.start == 0:
                self.state = self.before_latest = replace(self.state, read_only=roles.told_not_to_edit(self.messages))
            self._turns, users = read_turns(self.messages, self.where.start)
            self._events = sorted([*self._turns, *users], key=lambda event: event.message_index)
            if self.done:
                return
        event, state, rules = self._events[self._next], self.state, self.rules
        if isinstance(event, UserMessage):
            state, found = fold_user(state, event, rules)
            self.trips.extend((trip, state.repair) for trip in found)
            self.latest.extend(found)
        else:
            skip = unnumbered(state.folded) if event.message_index < self.where.reread_before else frozenset()
            volatile = frozenset(rules.policy.loops.volatile_keys)
            observed, workspace = observe(event, state.turns + 1, rules.classifier, skip, volatile, state.workspace)
            if observed.calls or not event.calls:  # else: not answered yet, or answered and folded already
                self.before_latest = state = replace(state, workspace=workspace)
                state, found = fold_turn(state, observed, rules)
                self.trips.extend((trip, state.repair) for trip in found)
                self.latest = list(found)
        self.state, self._next = state, self._next + 1

    def progress(self) -> ConversationState | None:
        """The state so far, its cursor at the first event not folded (None: no turn folded)."""
        if not self.state.turns or self._turns is None:
            return None
        if self.done:
            return self.caught().state
        cursor = cursor_at(self.messages, self._events[self._next].message_index, self.where.reread_before)
        return replace(self.state, cursor=cursor)

    def caught(self) -> Caught:
        state = replace(self.state, cursor=cursor_after(self._turns or [], self.messages))
        return Caught(state, tuple(self.trips), self.before_latest, tuple(self.latest))

    def run(self, budget: Budget | None = None) -> Caught:
        """Past `budget` (checked before each event and, inside one, as its outputs are read:
        `text.deadline`), `BudgetExceeded` carrying `progress` (which the engine keeps)."""
        with in_force(None if budget is None else budget.check):
            while not self.done:
                try:
                    if budget is not None:
                        budget.check()
                    self.step()
                except BudgetExceeded:
                    raise BudgetExceeded(self.progress()) from None
        return self.caught()


def fold_messages(
    state: ConversationState, messages: Sequence[Any], rules: FoldRules, budget: Budget | None = None
) -> Caught:
    """Fold the turns of `messages` that `state` has not seen. Past `budget` (checked before each
    turn and, inside one, as its outputs are read: `text.deadline`), `BudgetExceeded` carrying the
    state as it was before the turn the fold stopped in, its cursor at that turn."""
    return Folding(state, messages, rules).run(budget)
