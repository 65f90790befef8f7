"""The reply rules: what the proxy does with the model's reply to this request.

Three things may act on a reply, each bounded and each counted:

    salvage   a tool call the model wrote as text becomes a real call (`salvage.py`)
    gates     a reply that should not reach the agent is held and the upstream asked again
      done      it stops while a re-run of the failing check is owed
      finish    it finishes (a finish tool, or a final answer) while the check still fails
      action    mid-task, it is empty, or prose while an instruction of ours is unanswered;
                at any point, it meant to call a tool and did not (`salvage.miscall`)

The plan arms the gates for each request (`ReplyRules`); `judge` reads one whole reply and
`holding` says how much of a streamed reply must still be held. Pure, like the rest of the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import zip_longest

import orjson

from proxy.engine.detectors import Refusal
from proxy.engine.plan.handback import Handback
from proxy.engine.reading.classify import Classifier
from proxy.engine.text.exchange import Edit
from proxy.engine.text.messages import parse_arguments
from proxy.engine.text.protocols import written
from proxy.engine.text.salvage import OfferedTool, SalvagedCall, call_shaped, may_become_call, ran_on, salvage
from proxy.engine.text.textcalls import TextCall
from proxy.settings.kinds import CallKind

__all__ = [
    "Gate",
    "GatePlan",
    "Hold",
    "Judgement",
    "Refuser",
    "ReplyRules",
    "ReplyView",
    "holding",
    "judge",
    "settled",
]


Refuser = Callable[[Sequence[tuple[str, str]]], Refusal | None]
"""The block rung's judge of a reply's proposed calls, (tool, arguments JSON) each (`futility`)."""


class Gate(StrEnum):
    DONE = "done"
    FINISH = "finish"
    ACTION = "action"
    BLOCK = "block"
    """The reply's call cannot help, the state says (`futility`): not passed on, asked again."""


class Hold(StrEnum):
    """How much of a streamed reply seen so far must be held (`holding`)."""

    REPLY = "reply"
    """All of it: the reply may yet be salvaged, or gated as a whole."""
    TEXT_AHEAD = "text_ahead"
    """Its text may go to the agent at once; a call, or the reply's end, is held until the reply
    is whole and judged (a gate that then asks again continues the agent's stream)."""
    NONE = "none"
    """Nothing can act on it any more: relay the rest as it comes."""


@dataclass(frozen=True, slots=True)
class GatePlan:
    """An armed gate: what to send instead, and how many times. The request is built only when
    the gate fires (most armed gates never do)."""

    build: Callable[[], Edit]
    max_attempts: int
    refused: Callable[[Refusal], Edit] | None = None
    """For the block gate: the request that says what was refused and why."""

    @property
    def edit(self) -> Edit:
        return self.build()

    def edit_for(self, refusal: Refusal | None) -> Edit:
        """The request this gate sends for a reply it holds (`refusal`: why the block gate did)."""
        return self.refused(refusal) if self.refused is not None and refusal is not None else self.build()


@dataclass(frozen=True, slots=True)
class ReplyView:
    """A reply as the rules read it: its text, the names of the tools it calls (None: not yet
    known) and each call's arguments as JSON text so far (what the block gate reads)."""

    text: str = ""
    calls: tuple[str | None, ...] = ()
    arguments: tuple[str, ...] = ()
    """Each call's arguments as sent so far ("" before any arrived); whole once the reply is."""


@dataclass(frozen=True, slots=True)
class ReplyRules:
    offered: Mapping[str, OfferedTool] = field(default_factory=dict)
    """Tools a salvaged call may name; empty: no salvage."""
    finish_tools: frozenset[str] = frozenset()
    gates: Mapping[Gate, GatePlan] = field(default_factory=dict)
    empty_gate: Gate | None = None
    """The gate that holds an empty reply."""
    prose_gate: Gate | None = None
    """The gate that holds a text-only reply."""
    miscall_gate: Gate | None = None
    """The gate that holds a reply meant as a call that is none, when no gate holds all prose."""
    protocol: str = ""
    """The text protocol the agent writes its calls in (`text.protocols`), when it writes them as
    text: a reply that writes a call in it is a call, not a stop."""
    classifier: Classifier | None = None
    """Reads a call written as text (a finish command, say); set with `protocol`."""
    refuse: Refuser | None = None
    """The block rung armed: judges each (tool, arguments JSON) the reply proposes (`futility`)."""
    stop: Callable[[Refusal], Handback] | None = None
    """The stop rung: the hand-back the agent gets when the model, asked again, proposes a call
    refused too, made in vain before (`reply.futile_again`); None: its first reply passes, marked."""

    @property
    def active(self) -> bool:
        """Anything to watch at all; otherwise the reply is relayed untouched."""
        return bool(self.offered or self.gates)


@dataclass(frozen=True, slots=True)
class Judgement:
    gate: Gate | None = None
    """Hold the reply and ask again through this gate; None: pass it on."""
    salvaged: tuple[SalvagedCall, ...] | None = None
    """Pass it on as these calls instead of its text."""
    refusal: Refusal | None = None
    """Why the block gate holds it."""
    acts: bool = False
    """The reply makes a call (real, salvaged from its text, or written in the agent's protocol)."""


def _finishing(view: ReplyView, salvaged: tuple[SalvagedCall, ...] | None, rules: ReplyRules) -> bool:
    """A call that finishes: to a finish tool, or one a shell runs to submit (mini-swe-agent's
    `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`: the agent's own way to stop, in its one tool)."""
    if Gate.FINISH not in rules.gates:
        return False
    proposed = (
        [(c.name, c.arguments_json) for c in salvaged]
        if salvaged
        else [(name, raw) for name, raw in zip_longest(view.calls, view.arguments, fillvalue="") if name]
    )
    classifier = rules.classifier
    return any(
        name in rules.finish_tools
        or (classifier is not None and classifier.classify(name, parse_arguments(raw)[0]).kind is CallKind.FINISH)
        for name, raw in proposed
    )


def _may_finish(calls: Sequence[str | None], rules: ReplyRules) -> bool:
    """A call to these tools may finish once whole: a finish tool, or one that runs a command."""
    classifier = rules.classifier
    for name in calls:
        if name in rules.finish_tools:
            return True
        if name is not None and classifier is not None:
            fixed, by_arg, _values, shell = classifier.rule_of(name)
            if shell is not None or (fixed is None and by_arg is None):
                return True
    return False


def _written(view: ReplyView, rules: ReplyRules) -> TextCall | None:
    """The call the reply writes in the agent's text protocol, if it writes one."""
    if view.calls or not rules.protocol or rules.classifier is None:
        return None
    found = written(view.text)
    return found.call if found is not None else None


def _refusal(
    view: ReplyView, salvaged: tuple[SalvagedCall, ...] | None, rules: ReplyRules, as_text: TextCall | None = None
) -> Refusal | None:
    """Why the block rung refuses a call the reply proposes (made, salvaged or written as text), if it does."""
    if rules.refuse is None or Gate.BLOCK not in rules.gates:
        return None
    if salvaged:
        return rules.refuse([(c.name, c.arguments_json) for c in salvaged])
    proposed = [(name, raw) for name, raw in zip(view.calls, view.arguments, strict=False) if name is not None]
    if as_text is not None:
        proposed.append((as_text.name, orjson.dumps(as_text.arguments).decode()))
    return rules.refuse(proposed) if proposed else None


def judge(view: ReplyView, rules: ReplyRules) -> Judgement:
    """What to do with one whole reply."""
    salvaged = salvage(view.text, rules.offered) if rules.offered and not view.calls else None
    calls = view.calls or tuple(c.name for c in salvaged or ())
    if calls:
        if (refusal := _refusal(view, salvaged, rules)) is not None:
            return Judgement(Gate.BLOCK, salvaged, refusal, acts=True)
        return Judgement(Gate.FINISH if _finishing(view, salvaged, rules) else None, salvaged, acts=True)
    if (as_text := _written(view, rules)) is not None and rules.classifier is not None:
        if (refusal := _refusal(view, None, rules, as_text)) is not None:
            return Judgement(Gate.BLOCK, None, refusal, acts=True)
        finishes = rules.classifier.classify(as_text.name, as_text.arguments).kind is CallKind.FINISH
        return Judgement(Gate.FINISH if finishes and Gate.FINISH in rules.gates else None, None, acts=True)
    if not view.text.strip():
        return Judgement(rules.empty_gate, None)
    # salvage found no call above (or is off, with nothing offered to salvage): what is still
    # call-shaped is a miscall, without salvaging it a second time
    if rules.prose_gate is None and rules.miscall_gate is not None and call_shaped(view.text):
        return Judgement(rules.miscall_gate, None)
    return Judgement(rules.prose_gate, None)


def settled(view: ReplyView, rules: ReplyRules) -> Judgement | None:
    """A streamed reply whose outcome is already certain: it began with whole calls to offered
    tools and the model has run on past them. The rest would be dropped anyway: the caller may
    stop the generation and act now."""
    if view.calls or not rules.offered or not ran_on(view.text):
        return None
    judgement = judge(view, rules)
    return judgement if judgement.salvaged else None


def holding(view: ReplyView, rules: ReplyRules) -> Hold:
    """How much of a streamed reply seen so far must be held: all of it while it may yet be
    salvaged or gated whole (a call written as text, an empty start, a stop while a re-run is
    owed); its text alone may go ahead while a gate or the block rung waits for its end."""
    if rules.protocol and rules.gates and not view.calls:
        return Hold.REPLY  # a call written as text is whole only at the end: held while a gate is armed
    blocking = rules.refuse is not None and Gate.BLOCK in rules.gates
    if view.calls:
        unknown_or_finishing = Gate.FINISH in rules.gates and (None in view.calls or _may_finish(view.calls, rules))
        return Hold.REPLY if blocking or unknown_or_finishing else Hold.NONE  # a call is judged whole
    if not view.text.strip():
        return (
            Hold.REPLY if rules.empty_gate is not None or rules.offered else Hold.TEXT_AHEAD if blocking else Hold.NONE
        )
    could_call = bool(rules.offered) or rules.miscall_gate is not None
    if rules.prose_gate is Gate.DONE or (could_call and may_become_call(view.text)):
        return Hold.REPLY
    return Hold.TEXT_AHEAD if blocking or rules.prose_gate is not None else Hold.NONE
