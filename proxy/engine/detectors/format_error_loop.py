"""`format_error_loop`: the agent keeps telling the model its reply made no (valid) call.

Agent loops answer a reply without a usable action with a fixed complaint of their own and ask
again: mini-swe-agent's "provide EXACTLY ONE action", SWE-agent's "your last output did not use
any tool calls", a "no tool calls found" (`text.nudges`; a bare "please continue" is a nudge
but no complaint: `monologue` watches replies that repeat). Some keep the bad reply in the
history, some drop it and keep only their complaint, some ask again with only the newest pair:
in every shape, the complaints come one after another with no call of the model's between them.
A complaint is known by what it says (`text.nudges`) or, whatever it says, by where it stands:
mid-task, a message where the model's reply should be (right after a result or another message,
or after calls no result answered: `UserFacts.refused`) answers a reply the agent dropped; a
person does not write three in a row while the model stays silent. Or by being the same words
again: mid-task, after a reply with no call, a message the agent sent before in the same words
(numbers and spacing aside) is its own, and so was the first of them; a bare "please continue"
after replies is `monologue`'s (the model talks instead of acting), not counted here. Counts those complaints in a
row (a turn with a real call ends the run); fires when the count
reaches a rung of the ladder (first `after`, default `AFTER`), on the request that carries the
complaint, so the reply to it can be made to act.

Remedy: say plainly that the last replies were refused, name the slip where the last refused
reply shows one (`slip`: a closing fence glued to the line before it, as in `PY```, or a block
never closed, where the agent's parser finds no block: most of mini-swe-agent 1.x's format-error
loops in the corpus), and ask for exactly one call in the agent's own format (a fenced command
for a text protocol, a tool call otherwise). `force` asks for a call: the agent's one tool, or
any of its tools (a JSON schema for servers that ignore `tool_choice`); a text protocol's reply
is held until it writes a call (`plan.gates`).

Must never fire on: a person's new messages, however many (each its own words); one or two
complaints the model then answers with a call; "please continue" after replies, however often;
the same words again where no call of the model's was ever read (no tool call, no text protocol
we know): what that agent takes for a valid reply we cannot say, nor ask for (the corpus's test
part, AutoCodeRover: its repeated "the buggy locations is not precise" is about the answer's
content, and the instruction asked for "one tool call ()" of an agent that offers none); and
its instruction must never show an example call without the arguments the agent said were
missing (OpenHands 1.0 turns calls down for a missing `security_risk`: an example of a bare
`ls` would be turned down again).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from proxy.engine.detectors.base import Detector, Forced, Levers, Trip, TurnFacts
from proxy.engine.detectors.calls import excerpt
from proxy.engine.outputs.outcome import rejected
from proxy.engine.state.patterns import UserFacts
from proxy.engine.text.nudges import boilerplate
from proxy.engine.text.protocols import FORMS
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.wording import PREFIX
from proxy.settings.kinds import Action, Ask, Mode
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME"]

NAME = "format_error_loop"
AFTER = 3
"""The agent's complaints in a row (no call of the model's between them) that trip the pattern."""
MODE = Mode.SHADOW
"""Shadow by default: it trips, logs and counts, and says nothing. Test part (OpenHands 1.0, strict
rubric): judged right 9 of 10 and then, once the agent's rejections sent one per request were read
(`transcript._before`), 16 of 20 of the new trips (25 of 30 in all); redundant 16 of 71 (23%: over the 20% bar, the
model's next reply was a valid call anyway); tune part 5 of 10, redundant 13 of 26. A policy's
`mode = "act"` switches it on. A reply with no call is still held and asked again by the action
gate, which acts on the reply itself and so is never needless."""
OPTIONS = Ladder(after=AFTER, action=Action.FORCE, mode=MODE, confirm=1)


_FENCE = re.compile(r"^[ \t]*```", re.MULTILINE)
_GLUED = re.compile(r"^[ \t]*+(\S(?:[^\n`]*[^ \t\n`])?)[ \t]*```[ \t]*$", re.MULTILINE)
"""A line's text with ``` after it: up to its last character that is not a blank (the blanks
before the fence were tried one at a time, each time with all of those after it: quadratic)."""


def slip(reply: str) -> str:
    """What keeps a fenced reply from being read as a block, in words: a closing fence written on
    the line before it (`PY```), or a block opened and never closed; empty when neither."""
    if glued := _GLUED.search(reply):
        line = glued.group(1).strip()
        quoted = line if len(line) <= 40 else f"{line[:37]}..."
        return f"Your last reply put its closing ``` on the same line as `{quoted}`: put it on a line of its own."
    if len(_FENCE.findall(reply)) % 2:
        return "Your last reply opened a ``` block and never closed it: end it with ``` on a line of its own."
    return ""


@dataclass(frozen=True, slots=True)
class State:
    count: int = 0
    """The agent's complaints in a row since the model last made a call."""
    last: str = ""
    """The words of the last message that answered a reply without a call (`nudges.boilerplate`):
    the same words again are the agent's own, sent after every such reply."""


def fold(state: State, facts: TurnFacts, _ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    """A turn with a call ends the run; a reply without one leaves the count to its complaint."""
    return (State(), []) if facts.turn.calls else (state, [])


def on_user(state: State, facts: UserFacts, ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    words = boilerplate(facts.text) if facts.after == "reply" and facts.ordinal else ""
    if facts.refused:
        state = State(state.count + 1, words)
    elif words and words == state.last and not facts.nudge and facts.acted:
        state = State(max(state.count, 1) + 1, words)  # the one before was the agent's too
    else:
        return (State(state.count, words), []) if facts.nudge else (State(0, words), [])
    action = ladder.action_at(state.count)
    if action is None:
        return state, []
    detail = f"the agent rejected {state.count} replies in a row for making no valid call"
    return state, [
        facts.trip(DETECTOR, action, detail, state.count, excerpt=excerpt(facts.text), slip=slip(facts.answered))
    ]


def remedy(trip: Trip, context: RemedyContext) -> str:
    argued = rejected(trip.excerpt)  # the agent turned the call down for its arguments: no example without them
    form = FORMS.get(trip.subject)
    if form is None:
        tools = sorted(context.offered)
        example = context.vocabulary.run("ls") if context.vocabulary is not None and not argued else None
        shown = f" For example: {example.render()}." if example is not None else ""
        form = f"exactly one tool call ({', '.join(tools)}), made as a tool call, not written as text.{shown}"
    else:
        form = f"{form}."
    if argued:
        form = f"{form} Give it every argument the agent says it needs."
    fix = f"{trip.slip} " if trip.slip else ""
    return context.fit(
        f"{PREFIX} Your last {trip.count} replies were rejected: they made no valid call. The agent said:",
        trip.excerpt,
        f"{fix}Do not explain or apologise. Reply with {form}",
    )


def force(_trip: Trip, levers: Levers) -> Forced | None:
    """A call: the agent's one tool, or any of its tools."""
    if len(levers.offered) == 1:
        return Forced.of(next(iter(levers.offered)))
    return Forced.any() if levers.offered else None


DETECTOR = Detector(
    name=NAME,
    initial=State(),
    fold=fold,
    options=OPTIONS,
    remedy=remedy,
    force=force,
    on_user=on_user,
    episodic=False,  # a person's message ends nothing here: only a call does
    asks=Ask.CALL,
)
