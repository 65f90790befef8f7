"""The repair engine: one chat request in, what to send upstream (or answer) out.

    body -> transcript -> fold (new turns only) -> trips -> injections -> plan -> rewrite

`analyse` is synchronous and pure apart from the state cache. It raises on a bug; the HTTP
layer catches that and forwards the original bytes (fail-open). When nothing is injected
the original bytes go upstream untouched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

from proxy.classify import Classifier
from proxy.detectors import Trip
from proxy.dialects import CHAT, Dialect, Edit, Translation
from proxy.failure import DiagnosticClass
from proxy.fold import ConversationState, Injection, TripOutcome, fold_messages
from proxy.handback import Handback
from proxy.identity import conversation_id, task_id
from proxy.policy import Action, CallKind, Placement, Policy
from proxy.remedy import PREFIX, handback_text, memory_text, remedy_text
from proxy.rewrite import anchor_positions, apply_injections
from proxy.statecache import StateCache
from proxy.store import Verdict
from proxy.tokens import TokenCounter
from proxy.vocabulary import learn_vocabulary

__all__ = ["Analysis", "Engine", "Gate", "Parsed"]

_INJECTING = frozenset({Action.NUDGE, Action.FORCE, Action.RESTRICT})


@dataclass(frozen=True, slots=True)
class Gate:
    """The done-gate, owed on this request: what to send if the model tries to stop."""

    retry_body: bytes
    max_attempts: int


@dataclass(frozen=True, slots=True)
class Parsed:
    """The request as read once: its JSON, messages and identities."""

    data: dict[str, Any]
    messages: list[Any]
    """The transcript as chat-completions messages (translated from the request's dialect)."""
    body: bytes
    conversation: str
    task: str
    team: str
    translation: Translation
    dialect: Dialect


@dataclass(frozen=True, slots=True)
class Analysis:
    conversation: str
    team: str
    task: str
    body: bytes
    """What goes upstream: the original bytes unless something was placed."""
    rewritten: bool
    stream: bool
    model: str
    new_trips: tuple[Trip, ...]
    injected: tuple[Injection, ...]
    """Injections placed in this request (old ones re-inserted included)."""
    halt: Handback | None
    gate: Gate | None
    state: ConversationState
    parsed: Parsed
    memory_due: bool = False
    """Ask the verdict store about this task, then `Engine.remember` the answer."""
    record_verdict: bool = False
    """This request stalled the run (stuck or halted): its verdict should be stored."""
    clear_verdict: bool = False
    """A check passed on this request: a stored verdict for the task is stale."""
    new_outcomes: tuple[TripOutcome, ...] = ()
    """Aftermaths of earlier trips that this request settled."""

    def verdict(self, written_at: float) -> Verdict:
        """What this run's stall leaves for the next run of its task."""
        repair = self.state.repair
        return Verdict(
            team=self.team,
            task=self.task,
            conversation=self.conversation,
            failing_class=repair.last_diagnostic_class.value if repair.last_diagnostic_class else "none",
            signature=repair.last_diagnostic_signature or "",
            snippet=repair.snippet if repair.live else "",
            streak=repair.same_diagnostic_streak,
            edits_unchanged=repair.edits_on_failure,
            patterns=tuple(sorted({t.pattern for t in self.state.trips})),
            written_at=written_at,
        )


def _first_user_anchor(messages: list[Any]) -> str | None:
    index = next((i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"), None)
    return None if index is None else f"msg:{index}"


def _tool_names(tools: list[Any] | None) -> set[str]:
    names: set[str] = set()
    if isinstance(tools, list):
        for tool in tools:
            function = tool.get("function") if isinstance(tool, dict) else None
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                names.add(function["name"])
    return names


class Engine:
    """Holds one policy, its compiled classifier, the token counter and the state cache."""

    def __init__(self, policy: Policy, cache: StateCache[ConversationState], tokens: TokenCounter) -> None:
        self.policy = policy
        self.cache = cache
        self.tokens = tokens
        self.classifier = Classifier(policy.classify)

    def analyse(
        self, body: bytes, headers: Mapping[str, str], team: str = "default", dialect: Dialect = CHAT
    ) -> Analysis | None:
        """Fold the request's new turns and plan it; None when it is not an analysable transcript."""
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        translation = dialect.read(data) if isinstance(data, dict) else None
        if translation is None:
            return None
        messages = translation.messages
        parsed = Parsed(
            data,
            messages,
            body,
            conversation_id(messages, headers),
            task_id(messages, headers),
            team,
            translation,
            dialect,
        )
        key = (team, parsed.conversation)
        before = self.cache.get(key) or ConversationState()
        state, trips = fold_messages(before, messages, self.classifier, self.policy)
        state = self._record_injections(state, trips, translation.tools)
        self._keep(key, state)
        analysis = self._plan(parsed, state, tuple(trips))
        passed = state.repair.last_diagnostic_class is DiagnosticClass.PASS and state.repair != before.repair
        return replace(
            analysis,
            memory_due=self.policy.memory.enabled and not state.memory_checked,
            record_verdict=any(t.pattern == "stuck_same_diagnostic" or t.action is Action.HALT for t in trips),
            clear_verdict=passed,
            new_outcomes=state.outcomes[len(before.outcomes) :],
        )

    def remember(self, analysis: Analysis, verdict: Verdict | None) -> Analysis:
        """`analysis` with a prior attempt's verdict placed after the task (once per conversation,
        re-placed in later requests like any injection); a run's own verdict is never its prior."""
        parsed = analysis.parsed
        key = (parsed.team, parsed.conversation)
        state = replace(analysis.state, memory_checked=True)
        anchor = _first_user_anchor(parsed.messages)
        if verdict is not None and verdict.conversation != parsed.conversation and anchor is not None:
            text = memory_text(verdict, self.tokens, self.policy.repair.max_injected_tokens)
            placement = Placement.USER if self.policy.repair.placement is Placement.USER else Placement.SYSTEM
            note = Injection(anchor, "memory", text, placement, 0)
            state = replace(state, injections=(note, *state.injections))
            self._keep(key, state)
            planned = self._plan(parsed, state, analysis.new_trips)
            return replace(
                planned,
                record_verdict=analysis.record_verdict,
                clear_verdict=analysis.clear_verdict,
                new_outcomes=analysis.new_outcomes,
            )
        self._keep(key, state)
        return replace(analysis, state=state, memory_due=False)

    def _keep(self, key: tuple[str, str], state: ConversationState) -> None:
        """Cache the state, unless nothing is folded yet: before the first reply every run of a
        task has the same conversation id, and its state is empty and cheap to derive again."""
        if state.turns:
            self.cache.put(key, state)

    def _record_injections(
        self, state: ConversationState, trips: list[Trip], tools: list[Any] | None
    ) -> ConversationState:
        added: list[Injection] = []
        budget = self.policy.repair.max_injected_tokens
        injecting = [t for t in trips if t.action in _INJECTING]
        vocabulary = learn_vocabulary(tools, self.classifier) if injecting else None
        for trip in injecting:
            text = remedy_text(trip, state.repair, self.tokens, budget, vocabulary)
            added.append(Injection(trip.anchor, trip.pattern, text, self.policy.repair.placement, trip.turn))
        return replace(state, injections=state.injections + tuple(added)) if added else state

    def _plan(self, parsed: Parsed, state: ConversationState, new_trips: tuple[Trip, ...]) -> Analysis:
        data, messages, body = parsed.data, parsed.messages, parsed.body
        stream = parsed.translation.stream
        model = parsed.translation.model
        positions = anchor_positions(messages, {i.anchor for i in state.injections} | {state.last_anchor})
        at_tail = positions.get(state.last_anchor) == len(messages) - 1
        tail_trips = [t for t in state.trips if t.anchor == state.last_anchor] if at_tail else []
        halt = next((t for t in tail_trips if t.action is Action.HALT), None)
        analysis = Analysis(
            conversation=parsed.conversation,
            team=parsed.team,
            task=parsed.task,
            body=body,
            rewritten=False,
            stream=stream,
            model=str(model),
            new_trips=new_trips,
            injected=(),
            halt=None,
            gate=None,
            state=state,
            parsed=parsed,
        )
        if halt is not None:
            handback = Handback(
                text=handback_text(halt, state.repair, state.turns, state.progress.describe()),
                reason=halt.pattern,
                current_failure=state.repair.current_failure(),
                conversation=parsed.conversation,
                turn=halt.turn,
            )
            return replace(analysis, halt=handback)

        placed = [i for i in state.injections if i.anchor in positions]
        rewritten = apply_injections(messages, placed, positions) if placed else None
        offered = _tool_names(parsed.translation.tools)
        edit = Edit(
            messages=rewritten,
            tool_choice=self._tool_choice(tail_trips, state, offered),
            tools=self._restricted(tail_trips, offered),
        )
        changed = edit != Edit()
        gate = self._gate(parsed, rewritten or messages, state, offered) if state.repair.reverify_owed else None
        if not changed:
            return replace(analysis, gate=gate)
        out = parsed.dialect.write(data, parsed.translation, edit)
        return replace(analysis, body=orjson.dumps(out), rewritten=True, injected=tuple(placed), gate=gate)

    def _restricted(self, tail_trips: Sequence[Trip], offered: set[str]) -> list[str] | None:
        """`restrict` takes the misused tool out of `tools` for this one request: the repeated
        tool for a loop, the pure edit tools for a stuck failure. Never all of them: a request
        left with no tools would change what the agent can do, not just steer it."""
        restricting = [t for t in tail_trips if t.action is Action.RESTRICT]
        if not restricting or not offered:
            return None
        drop: set[str] = set()
        for trip in restricting:
            if trip.tool:
                drop.add(trip.tool)
            elif trip.pattern == "stuck_same_diagnostic":
                drop |= {name for name in offered if self.classifier.rule_of(name)[0] is CallKind.EDIT}
        kept = sorted(offered - drop)
        return kept if kept and len(kept) < len(offered) else None

    def _verify_tool(self, state: ConversationState, tools: set[str]) -> str | None:
        name = self.policy.repair.verify_tool or state.repair.failing_tool
        return name if name in tools else None

    def _tool_choice(self, tail_trips: Sequence[Trip], state: ConversationState, tools: set[str]) -> str | None:
        """`force` pins the next call: a read for a stuck failure, the failing check for a
        re-verify, an edit for read drift. Loops have no one right tool: they get the nudge."""
        forced = [t for t in tail_trips if t.action is Action.FORCE]
        if not forced:
            return None
        pattern = forced[-1].pattern
        if pattern == "reverify_owed":
            name = self._verify_tool(state, tools)
        elif pattern == "stuck_same_diagnostic":
            name = self.classifier.tool_of_kind(CallKind.READ, tools)
        elif pattern == "read_stagnation":
            name = self.classifier.tool_of_kind(CallKind.EDIT, tools)
        else:
            name = None
        return name

    def _gate(self, parsed: Parsed, messages: list[Any], state: ConversationState, tools: set[str]) -> Gate | None:
        if not (self.policy.repair.done_gate and self.policy.repair.max_verify_attempts > 0):
            return None
        call = state.repair.failing_command or f"{state.repair.failing_tool} with {state.repair.failing_arguments}"
        text = (
            f"{PREFIX} Do not stop yet: the check that failed has not been re-run since your last edit. "
            f"Run it now, exactly as before: {call}"
        )
        role = "user" if self.policy.repair.placement is Placement.USER else "system"
        edit = Edit(messages=[*messages, {"role": role, "content": text}], tool_choice=self._verify_tool(state, tools))
        retry = parsed.dialect.write(parsed.data, parsed.translation, edit)
        return Gate(retry_body=orjson.dumps(retry), max_attempts=self.policy.repair.max_verify_attempts)
