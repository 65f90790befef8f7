"""The engine: one policy, and the conversation states it keeps, turning requests into decisions.

    request -> fold (new turns only; remedies written for new trips) -> [prior verdict] -> plan

`fold` and `plan` are synchronous and pure apart from the state cache, and split so that
the caller may look up a prior attempt's verdict in between (the only await of an
analysis); `decide` does both for callers without a store. They raise on a bug; the HTTP
layer then forwards the original bytes (fail-open).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from proxy.engine.detectors import Trip, pattern_of
from proxy.engine.plan.decide import Decision, Effects, Request, decide, passed
from proxy.engine.plan.handback import memory_text
from proxy.engine.plan.rules import Rules
from proxy.engine.state.budget import Budget, BudgetExceeded
from proxy.engine.state.cache import StateCache
from proxy.engine.state.conversation import INJECTIONS_KEPT, ConversationState, Injection
from proxy.engine.state.failure import RepairState
from proxy.engine.state.fold import Caught, Folding
from proxy.engine.state.verdict import Verdict
from proxy.engine.text.exchange import Translation
from proxy.engine.text.identity import conversation_id, task_id
from proxy.engine.text.salvage import offered_tools
from proxy.engine.text.tokens import TokenCounter
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.vocabulary import Learnt
from proxy.engine.writing.wording import fitter
from proxy.settings.kinds import Action, Placement
from proxy.settings.policy import Policy

__all__ = ["Behind", "Engine", "Folded"]

_INJECTING = frozenset({Action.NUDGE, Action.FORCE, Action.RESTRICT})
STANDALONE_CACHE_ENTRIES = 10_000
"""State cache size of an engine of its own (`Engine.of`); a server's comes from its settings."""
STANDALONE_CACHE_TTL = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class Folded:
    """A request folded into its conversation, not yet planned."""

    request: Request
    before: ConversationState
    """The state before the request's latest turn (see `fold.Caught`)."""
    state: ConversationState
    new_trips: tuple[Trip, ...]
    """The latest turn's trips (earlier turns' were reported by the requests that followed them)."""
    new_injections: tuple[Injection, ...]
    memory_due: bool
    """Memory is on and the verdict store has not been asked about this conversation's task yet."""


class Behind(Exception):
    """The conversation's state is further behind the request than its caller folds in the request's
    path (a conversation first seen long, or one that departs from its folded history): `folding`,
    not begun, is the fold of `request` that catches it up (`Engine.caught_up` keeps its end)."""

    def __init__(self, request: Request, folding: Folding) -> None:
        super().__init__(f"{folding.unread} messages unread")
        self.request = request
        self.folding = folding


def _first_user_anchor(messages: list[Any]) -> str | None:
    index = next((i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"), None)
    return None if index is None else f"msg:{index}"


class Engine:
    """One policy compiled (`Rules`), with the state cache and token counter it shares."""

    def __init__(self, policy: Policy, cache: StateCache[ConversationState], tokens: TokenCounter) -> None:
        self.rules = Rules.of(policy)
        self.cache = cache
        self.tokens = tokens

    @classmethod
    def of(cls, policy: Policy) -> Engine:
        """An engine of its own (replay, benchmarks, tests): a private state cache and token counter."""
        return cls(policy, StateCache(STANDALONE_CACHE_ENTRIES, STANDALONE_CACHE_TTL), TokenCounter())

    @property
    def policy(self) -> Policy:
        return self.rules.policy

    def request(self, translation: Translation, headers: Mapping[str, str], team: str = "default") -> Request:
        """Whose request this is: its conversation and task, from the transcript or the headers."""
        messages = translation.messages
        tools = Learnt(translation.tools, self.rules.classifier)
        return Request(translation, conversation_id(messages, headers), task_id(messages, headers), team, tools)

    def fold(self, request: Request, budget: Budget | None = None, behind: int | None = None) -> Folded:
        """The conversation's state with this request's new turns folded and new trips' remedies
        written; `BudgetExceeded` past the budget's deadline, the turns folded by then kept (the
        next request, or a catch-up, reads on from there). With `behind`: `Behind`, before anything
        is read, when more than that many messages are unread."""
        key = (request.team, request.conversation)
        before = self.cache.get(key) or ConversationState()
        folding = Folding(before, request.translation.messages, self.rules)
        if behind is not None and folding.unread > behind:
            raise Behind(request, folding)
        try:
            caught = folding.run(budget)
        except BudgetExceeded as exc:
            if isinstance(exc.progress, ConversationState) and exc.progress.turns > before.turns:
                self.cache.put(key, exc.progress)
            raise
        return self._folded(request, caught)

    def folding(self, request: Request) -> Folding:
        """The fold of what the conversation's state has not read of `request`, not begun."""
        before = self.cache.get((request.team, request.conversation)) or ConversationState()
        return Folding(before, request.translation.messages, self.rules)

    def caught_up(self, request: Request, folding: Folding) -> None:
        """Keep the end of a fold run beside the traffic (`Behind`): the state, its remedies written,
        cached for the conversation's next request, unless a later request's fold got further meanwhile."""
        state = self._folded(request, folding.caught()).state
        key = (request.team, request.conversation)
        held = self.cache.get(key)
        if state.turns and (held is None or held.turns <= state.turns):
            self.cache.put(key, state)

    def _folded(self, request: Request, caught: Caught) -> Folded:
        state = caught.state
        injections = self._remedies(caught.trips, request.tools)
        if injections:
            state = replace(state, injections=(*state.injections, *injections)[-INJECTIONS_KEPT:])
        new_trips = caught.latest_trips
        latest = tuple(i for i in injections if i.turn == state.turns)
        due = self.policy.memory.enabled and not state.memory_checked
        return Folded(request, caught.before_latest, state, new_trips, latest, due)

    def plan(self, folded: Folded, prior: Verdict | None = None, *, asked: bool = False) -> Decision:
        """Decide the request. `asked`: the verdict store was asked about the task (`prior` is
        its answer), so the conversation's memory is settled; a prior attempt's verdict is
        placed after the task once, then re-placed like any injection."""
        request, state = folded.request, folded.state
        if folded.memory_due and asked:
            state = replace(state, memory_checked=True)
            anchor = _first_user_anchor(request.translation.messages)
            if prior is not None and prior.conversation != request.conversation and anchor is not None:
                text = memory_text(prior, self.tokens, self.policy.repair.max_injected_tokens)
                placement = Placement.USER if self.policy.repair.placement is Placement.USER else Placement.SYSTEM
                note = Injection(anchor, "memory", text, placement, 0)
                state = replace(state, injections=(note, *state.injections)[:INJECTIONS_KEPT])
        if state.turns:
            # Before the first reply every run of a task has the same conversation id; its state
            # is empty and cheap to derive again, so it is not cached.
            self.cache.put((request.team, request.conversation), state)
        effects = Effects(
            record_verdict=any(
                t.acting and (pattern_of(t).remembered or t.action is Action.HALT) for t in folded.new_trips
            ),
            clear_verdict=passed(folded.before, state),
            outcomes=state.outcomes[
                max(0, len(state.outcomes) - (state.outcomes_total - folded.before.outcomes_total)) :
            ],
            injected_tokens=sum(self.tokens.count(i.text) for i in folded.new_injections),
        )
        fit = fitter(self.tokens, self.policy.repair.max_injected_tokens)
        return decide(self.rules, request, state, folded.new_trips, effects, fit)

    def decide(self, translation: Translation, headers: Mapping[str, str], team: str = "default") -> Decision:
        """Fold and plan with no verdict store (replay, benchmarks)."""
        return self.plan(self.fold(self.request(translation, headers, team)))

    def _remedies(self, trips: tuple[tuple[Trip, RepairState], ...], tools: Learnt) -> tuple[Injection, ...]:
        """Each injecting trip's remedy, written from the failure model as it stood on its turn: one
        instruction a turn, the first pattern's in planning order (a loop that two patterns name, an
        exact round of edit and failing test that is also the same failure again, is told once)."""
        injecting: list[tuple[Trip, RepairState]] = []
        for t, repair in trips:
            if t.acts in _INJECTING and all(other.anchor != t.anchor for other, _ in injecting):
                injecting.append((t, repair))
        if not injecting:
            return ()
        vocabulary = tools.vocabulary
        fit = fitter(self.tokens, self.policy.repair.max_injected_tokens)
        offered = offered_tools(tools.tools)
        placement = self.policy.repair.placement
        return tuple(
            Injection(
                t.anchor,
                t.pattern.name,
                pattern_of(t).remedy(t, RemedyContext(repair, vocabulary, fit, offered)),
                placement,
                t.turn,
            )
            for t, repair in injecting
        )
