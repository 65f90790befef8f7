"""What the fold needs of a pattern, and what a pattern's fold sees and returns.

The detectors (`proxy.engine.detectors`, one file per pattern) implement `Folding`; the
compiled policy (`proxy.engine.plan.rules.Rules`) implements `FoldRules`. The fold depends on
these two interfaces, not on the detectors themselves, so the state and its fold sit below
the patterns that plug into it. A trip carries the pattern that made it as a `Folding`: what
the fold reads of it (its name, whether it is watched); the plan reaches its remedy, `force`
and `restrict` through `proxy.engine.detectors.pattern_of`, whose types this layer cannot name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from proxy.engine.reading.classify import Classifier
from proxy.engine.reading.observe import ObservedTurn
from proxy.engine.state.failure import RepairState
from proxy.engine.state.progress import Progress
from proxy.settings.kinds import Action
from proxy.settings.policy import Ladder, Policy

__all__ = ["DetectorStates", "FoldRules", "Folding", "Stateful", "Trip", "TurnFacts", "UserFacts"]

S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)


class Stateful(Protocol, Generic[S_co]):
    """A pattern with a state of its own: its name, and its state before any turn."""

    @property
    def name(self) -> str: ...
    @property
    def initial(self) -> S_co: ...


@dataclass(frozen=True, slots=True)
class Trip:
    """One pattern firing on one turn."""

    pattern: Folding
    """The pattern that fired (a registered detector: its `name` is what records, logs and
    headers show, and a pickled trip carries only that name)."""
    action: Action
    detail: str
    """Why, in words generated from the state (never prompt text beyond the failure snippet)."""
    turn: int
    """1-based ordinal of the turn that tripped it."""
    anchor: str
    """Stable id of that turn's end, where its injection is placed in every later request."""
    count: int
    """The pattern's count when it fired (streak, repeats, turns)."""
    subject: str = ""
    """What the pattern is about, as the agent would recognise it (a call, a tool, a file)."""
    excerpt: str = ""
    """A short quote of the evidence (a repeated output, a repeated reply)."""
    tool: str = ""
    """The one tool the pattern is about, when there is one (what `restrict` takes away)."""
    arguments: tuple[str, ...] = ()
    """The argument names of the call the pattern is about (what a remedy may tell it to change)."""
    slip: str = ""
    """What was wrong with the evidence, read from it (a reply's closing fence glued to a line)."""
    since: int = 0
    """The turn the loop it names began (0: not known): how late the trip came is `turn - since`."""
    shadow: bool = False
    """Its pattern runs in shadow (`Mode.SHADOW`): `action` is what it would do; it does nothing."""

    @property
    def acts(self) -> Action:
        """What the trip does: its `action`, or only `observe` for a pattern in shadow."""
        return Action.OBSERVE if self.shadow else self.action

    @property
    def acting(self) -> bool:
        """It does something: not in shadow, and not a detection still waiting to be confirmed
        (`Ladder.confirm`: an `observe` trip)."""
        return not self.shadow and self.action is not Action.OBSERVE


@dataclass(frozen=True, slots=True)
class TurnFacts:
    """A folded turn as detectors see it: the turn, and the failure model before and after it."""

    turn: ObservedTurn
    before: RepairState
    after: RepairState
    failure_model: bool
    """The current-failure model is on (it owns repeated failures)."""
    read_only: bool = False
    """The agent's own prompt forbids it to edit the code (`text.roles`)."""
    progress: Progress = field(default_factory=Progress)
    """Progress after the turn: its calls are the newest `steps` (`state.progress`)."""

    def trip(
        self,
        pattern: Folding,
        action: Action,
        detail: str,
        count: int,
        *,
        subject: str = "",
        excerpt: str = "",
        tool: str = "",
        arguments: tuple[str, ...] = (),
        since: int = 0,
    ) -> Trip:
        """A trip of `pattern` on this turn; `since`: the turn its loop began (default: `count`
        turns back, this one included)."""
        turn = self.turn
        began = since or max(1, turn.ordinal - count + 1)
        return Trip(
            pattern, action, detail, turn.ordinal, turn.anchor, count, subject, excerpt, tool, arguments, since=began
        )


@dataclass(frozen=True, slots=True)
class DetectorStates:
    """Every detector's state, by detector; a detector with none stored is at its `initial`."""

    values: Mapping[str, object] = field(default_factory=dict)

    def get(self, detector: Stateful[S]) -> S:
        value = self.values.get(detector.name, detector.initial)
        if type(value) is not type(detector.initial):
            raise TypeError(f"{detector.name}: stored state is a {type(value).__name__}")
        return value

    def put(self, detector: Stateful[S], state: S) -> DetectorStates:
        if self.values.get(detector.name) is state:
            return self
        return DetectorStates({**self.values, detector.name: state})

    def reset(self, names: frozenset[str]) -> DetectorStates:
        """These detectors back at their initial state (a new episode)."""
        if names.isdisjoint(self.values):
            return self
        return DetectorStates({k: v for k, v in self.values.items() if k not in names})


@dataclass(frozen=True, slots=True)
class UserFacts:
    """A user message as detectors see it (between turns: no call of its own)."""

    text: str
    index: int
    """Its index in the request's messages (where an instruction about it is placed)."""
    ordinal: int
    """Turns folded before it."""
    repeated: bool
    """The same text (numbers and spacing aside) came before in the conversation."""
    nudge: bool
    """The agent's own nudge: a complaint that the last reply made no (valid) call, or a bare
    "continue" (`text.nudges`); no person's message."""
    complaint: bool
    """The nudge says the last reply made no (valid) call, or had the wrong format."""
    protocol: str
    """The text protocol the agent writes its calls in, if any (`text.protocols`)."""
    answered: str = ""
    """The text of the model's reply it answers, if the transcript kept it."""
    refused: bool = False
    after: str = ""
    """What came right before it (`text.transcript.UserMessage.after`)."""
    """The agent answers a reply it could not use: its complaint says so, or, mid-task, the message
    stands where the model's reply should be (right after a result, another user message, or calls
    no result answered: the agent dropped the reply and said something instead)."""
    acted: bool = False
    """A call of the model's was read earlier in the conversation (a tool call, or one written in
    a text protocol we know): the agent has a way to call that we can name."""

    def trip(
        self, pattern: Folding, action: Action, detail: str, count: int, *, excerpt: str = "", slip: str = ""
    ) -> Trip:
        """A trip of `pattern` on this message, anchored right after it."""
        return Trip(
            pattern,
            action,
            detail,
            self.ordinal,
            f"msg:{self.index}",
            count,
            self.protocol,
            excerpt,
            slip=slip,
            since=max(0, self.ordinal - count + 1),
        )


class Folding(Protocol):
    """A pattern as the fold drives it."""

    @property
    def name(self) -> str: ...
    @property
    def episodic(self) -> bool:
        """A person's new user message starts a new episode: its state goes back to the start."""
        ...

    @property
    def watched(self) -> bool:
        """What follows a trip is recorded (cleared, changed, unchanged, handed back)."""
        ...

    def step(
        self, states: DetectorStates, facts: TurnFacts, options: Ladder, policy: Policy
    ) -> tuple[DetectorStates, list[Trip]]: ...

    def user_step(
        self, states: DetectorStates, facts: UserFacts, options: Ladder, policy: Policy
    ) -> tuple[DetectorStates, list[Trip]]:
        """Fold a user message (most patterns watch only turns and leave their state as it is)."""
        ...


class FoldRules(Protocol):
    """A policy compiled for the fold: the policy, its classifier, the patterns in planning
    order and each one's options."""

    @property
    def policy(self) -> Policy: ...
    @property
    def classifier(self) -> Classifier: ...
    @property
    def patterns(self) -> Sequence[Folding]: ...
    @property
    def options(self) -> Mapping[str, Ladder]:
        """Each pattern's options (a `Ladder`, or its own subclass of one)."""
        ...

    @property
    def episodic(self) -> frozenset[str]:
        """The names of the episodic patterns."""
        ...
