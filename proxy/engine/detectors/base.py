"""What a pattern is: one typed detector per file, everything about it in that file.

A `Detector` bundles a pattern's pure fold over its own frozen state, its options (its
ladder and any knob of its own, with their defaults and types: a `Ladder` subclass the
policy's `[patterns.<name>]` table is validated against), its episode rule, the instruction
it injects, what `force` pins and what `restrict` takes away, and whether its aftermath is
watched or remembered. The fold drives the registered detectors in order, and every trip
carries the detector that made it: the engine and the plan call its hooks through the trip,
never by its name, which is written in its own file and in policy files.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from pydantic import ValidationError

from proxy.engine.reading.classify import Classifier
from proxy.engine.reading.proposal import Proposal
from proxy.engine.state.failure import RepairState
from proxy.engine.state.patterns import DetectorStates, Trip, TurnFacts, UserFacts
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.vocabulary import Call, Vocabulary
from proxy.settings.kinds import Ask, CallKind
from proxy.settings.policy import Ladder, Policy
from proxy.settings.problems import ConfigProblem, problems_of

__all__ = ["Detector", "DetectorStates", "Levers", "Pattern", "Refusal", "Trip", "TurnFacts"]

S = TypeVar("S")
Opts = TypeVar("Opts", bound=Ladder)


@dataclass(frozen=True, slots=True)
class Levers:
    """What `force` and `restrict` choose from: the tools this request offers."""

    offered: frozenset[str]
    classifier: Classifier
    repair: RepairState
    verify_tool: str
    """The policy's tool for re-running a check; empty: the tool that ran the failing check."""
    vocabulary: Vocabulary | None = None
    """The agent's own calls (`writing.vocabulary`): what `force` pins, where it pins one call."""

    @property
    def vocabulary_runs(self) -> bool:
        """The tools run, read or edit code (a coding agent's), by the policy's classification."""
        kinds = {CallKind.EDIT, CallKind.READ, CallKind.VERIFY, CallKind.SEARCH}
        for name in self.offered:
            fixed, _arg, values, shell = self.classifier.rule_of(name)
            if shell is not None or fixed in kinds or kinds & set(values.values()):
                return True
        return False

    def rerun_tool(self) -> str | None:
        """The tool that re-runs the failing check, when this request offers it."""
        name = self.verify_tool or self.repair.failing_tool
        return name if name in self.offered else None


@dataclass(frozen=True, slots=True)
class Refusal:
    """A proposed call the state says cannot help: it is not passed on (the block rung)."""

    pattern: str
    reason: str
    """What was refused and why, quoting the evidence."""
    instead: str
    """The next step the state suggests (an exact call where it is known)."""
    tool: str | None = None
    """The tool that next step uses, when it is another than the refused call's: the re-ask is
    narrowed to it (a small model asked again in words proposes the refused call again)."""
    pinned: Call | None = None
    """The next call's tool and the arguments it must carry, as the proxy has seen them (an edit's
    text to replace, exactly as the file has it): the re-ask's call schema holds them to these
    values, the rest is the model's to write."""
    times: int = 1
    """How many times in a row such a call has already been made in vain (the failing check's
    identical failures, the same call's identical errors, the pointless calls made): the stop
    rung asks for more than one (`STOP_AFTER`)."""
    owned: bool = False
    """Refused on evidence the block gate owns and is measured for as its own, whatever the
    pattern's mode (`Detector.gate_owned`): an edit that cannot change the file (its replacement
    the text it replaces: `gate:block`, 10 of 10 refusals judged right on the corpus's test part)
    or that undoes the last edit (A -> B -> A, refused as a copy is: issue 61), or the failing check
    proposed again as it was with nothing but reads since it failed (its result is known; the
    re-ask names the failure's next step, the failure model's evidence: asked in plain words,
    Qwen2.5-Coder-1.5B answered with the same run and was handed back at its first turn,
    recovery bench, countdown seed 1 at c307762). Any other refusal comes only from a pattern
    that acts: a pattern in shadow changes nothing."""
    halts: bool = True
    """The stop rung (`reply.futile_again`) may hand the run back when a gate's retry is answered
    with this call. Not for an owned refusal of a pattern in shadow whose `Detector.owned_halts` is
    off; the model's first reply passes, marked."""


@dataclass(frozen=True, slots=True)
class Forced:
    """What `force` pins: a tool, and the kind of call wanted when the tool does several (an
    editor whose `command` views or edits): a constrained request narrows that argument to it."""

    tool: str
    """The tool; empty: any of the request's tools (a call is required, whichever)."""
    kind: CallKind | None = None
    call: Call | None = None
    """The one call the remedy names, where it names one: its arguments held in the call schema
    as a re-ask's are (`callschema`), so the instruction and the schema sent with it ask for one
    call. Left to the kind, the stuck remedy's "first look at backoff.py as it is now: call
    str_replace_editor with {"command": "view", ...}" went up with a schema allowing only
    `"command": "str_replace"`, and the model wrote a `str_replace` with no `old_str` (issue 51)."""

    @classmethod
    def of(cls, tool: str | None, kind: CallKind | None = None) -> Forced | None:
        return None if tool is None else cls(tool, kind)

    @classmethod
    def exactly(cls, call: Call, kind: CallKind | None = None) -> Forced:
        """This call, its arguments held."""
        return cls(call.name, kind, call)

    @classmethod
    def any(cls) -> Forced:
        """Some call, of any of the request's tools."""
        return cls("")


def no_force(_trip: Trip, _levers: Levers) -> Forced | None:
    """Loops have no one right tool: `force` is the instruction alone."""
    return None


def the_tripped_tool(trip: Trip, _levers: Levers) -> frozenset[str]:
    """`restrict` takes away the one tool the trip is about, when it names one."""
    return frozenset({trip.tool}) if trip.tool else frozenset()


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Detector(Generic[S, Opts]):
    """One pattern, whole: registered once (`proxy.engine.detectors.REGISTRY`), the same object
    wherever it is met (equal only to itself), and the one its trips carry."""

    name: str
    initial: S
    """The state before any turn (and after a new episode starts, when `episodic`)."""
    fold: Callable[[S, TurnFacts, Opts, Policy], tuple[S, list[Trip]]]
    """Pure: the state after one turn, and the trips that turn causes (with the policy's options)."""
    options: Opts
    """The defaults: its ladder and its own options. A policy's `[patterns.<name>]` is laid
    over them and validated by their class (`configure`)."""
    remedy: Callable[[Trip, RemedyContext], str]
    """The instruction a nudge, force or restrict injects."""
    episodic: bool = True
    """A person's new user message starts a new episode: the state goes back to `initial`."""
    force: Callable[[Trip, Levers], Forced | None] = no_force
    """The tool `force` pins (it must be offered); None: the instruction alone."""
    restrict: Callable[[Trip, Levers], frozenset[str]] = the_tripped_tool
    """The tools `restrict` takes out of `tools` for one request."""
    watched: bool = False
    """What follows a trip is recorded (cleared, changed, unchanged, handed back) for the holdout report."""
    remembered: bool = False
    """A trip means the run stalled: its verdict is stored for the next run of the task (a halt always is)."""
    on_user: Callable[[S, UserFacts, Opts, Policy], tuple[S, list[Trip]]] | None = None
    """Pure, like `fold`, for a user message between turns; None: the pattern watches turns only."""
    blocks: Callable[[S, RepairState, Opts], bool] | None = None
    """The block rung: whether, in this state, the pattern may refuse a proposed call (cheap; a
    reply is held only while some pattern may); None: the pattern never blocks."""
    futile: Callable[[S, Proposal, RemedyContext, Opts], Refusal | None] | None = None
    """The block rung's judgement of one proposed call, given `blocks` said it may refuse."""
    asks: Ask = Ask.STOP
    """The step its instruction asks for (re-run the check, make a change, stop making the call
    it names, make a call): what the corpus report checks the recorded run's next calls against,
    to count the trips whose step the agent was taking anyway (redundant)."""
    judges_text: bool = False
    """The block rung also judges calls an agent writes in its text protocol. Off where the
    agent's own tool keeps state the proxy does not see (SWE-agent's open file and window, its
    editor's linter that already turns a bad edit down and says so)."""
    gate_owned: bool = False
    """Some of its refusals are the block gate's own evidence (`Refusal.owned`): in shadow, the
    rung still refuses those, and only those. Every other pattern in shadow refuses nothing."""
    owned_halts: bool = True
    """In shadow, the stop rung (`reply.futile_again`) may hand the run back on its owned refusals
    (a third no-op edit in answer to a gate's retry). False: they refuse, and never hand back."""
    names_next_step: bool = False
    """Its next step (`writing.failure_reads.next_step`: the read the failure points at, then the held
    edit) is what the finish and action gates ask for on a live failure nothing has changed since;
    only while it acts (in shadow, a gate asks for a call, any: issue 61)."""

    def __repr__(self) -> str:
        return f"Detector({self.name!r})"

    def __reduce__(self) -> tuple[Callable[[str], Pattern], tuple[str]]:
        """Pickled as its name, read back as the registered detector of that name: a trip in a
        conversation state shared between workers (`state.codec`) costs a name, not a pattern."""
        from proxy.engine.detectors import registered  # noqa: PLC0415 - the registry imports this module

        return registered, (self.name,)

    @property
    def ladder(self) -> Ladder:
        """The default ladder (part of the default options)."""
        return self.options

    def configure(self, table: Mapping[str, Any], source: str) -> tuple[Opts | None, list[ConfigProblem]]:
        """A policy's table laid over the defaults: the options, or the problems, each naming
        `source` and the key under `patterns.<name>`."""
        try:
            return type(self.options).model_validate({**self.options.model_dump(), **table}), []
        except ValidationError as exc:
            problems = problems_of(exc, source)
            return None, [ConfigProblem(p.file, f"patterns.{self.name}.{p.key}", p.message) for p in problems]

    def step(
        self, states: DetectorStates, facts: TurnFacts, options: Ladder, policy: Policy
    ) -> tuple[DetectorStates, list[Trip]]:
        """Fold this detector's own state in `states`, with the options `configure` gave."""
        if not isinstance(options, type(self.options)):
            raise TypeError(f"{self.name}: options are a {type(options).__name__}")
        state, trips = self.fold(states.get(self), facts, options, policy)
        return states.put(self, state), trips

    def refuser(
        self, states: DetectorStates, repair: RepairState, options: Ladder, *, text: bool = False
    ) -> Callable[[Proposal, RemedyContext], Refusal | None] | None:
        """What the block rung asks of this pattern in this state: a judge of proposed calls (of
        calls written as text, with `text`), or None when it refuses nothing now."""
        blocks, futile = self.blocks, self.futile
        if blocks is None or futile is None or not isinstance(options, type(self.options)):
            return None
        if text and not self.judges_text:
            return None
        state = states.get(self)
        if not blocks(state, repair, options):
            return None
        return lambda proposal, context: futile(state, proposal, context, options)

    def user_step(
        self, states: DetectorStates, facts: UserFacts, options: Ladder, policy: Policy
    ) -> tuple[DetectorStates, list[Trip]]:
        """Fold a user message into this detector's state, when it watches them."""
        if self.on_user is None:
            return states, []
        if not isinstance(options, type(self.options)):
            raise TypeError(f"{self.name}: options are a {type(options).__name__}")
        state, trips = self.on_user(states.get(self), facts, options, policy)
        return states.put(self, state), trips


class Pattern(Protocol):
    """A detector as the engine sees it, whatever its state type."""

    @property
    def name(self) -> str: ...
    @property
    def options(self) -> Ladder: ...
    @property
    def ladder(self) -> Ladder: ...
    @property
    def remedy(self) -> Callable[[Trip, RemedyContext], str]: ...
    @property
    def episodic(self) -> bool: ...
    @property
    def force(self) -> Callable[[Trip, Levers], Forced | None]: ...
    @property
    def restrict(self) -> Callable[[Trip, Levers], frozenset[str]]: ...
    @property
    def watched(self) -> bool: ...
    @property
    def remembered(self) -> bool: ...
    @property
    def asks(self) -> Ask: ...
    @property
    def gate_owned(self) -> bool: ...
    @property
    def owned_halts(self) -> bool: ...
    @property
    def names_next_step(self) -> bool: ...

    def configure(self, table: Mapping[str, Any], source: str) -> tuple[Ladder | None, list[ConfigProblem]]: ...

    def refuser(
        self, states: DetectorStates, repair: RepairState, options: Ladder, *, text: bool = False
    ) -> Callable[[Proposal, RemedyContext], Refusal | None] | None: ...

    def step(
        self, states: DetectorStates, facts: TurnFacts, options: Ladder, policy: Policy
    ) -> tuple[DetectorStates, list[Trip]]: ...

    def user_step(
        self, states: DetectorStates, facts: UserFacts, options: Ladder, policy: Policy
    ) -> tuple[DetectorStates, list[Trip]]: ...
