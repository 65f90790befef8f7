"""The block rung: the calls a reply proposes, judged against the state before the agent sees them.

Each pattern that can refuse a call says when it may (`Detector.blocks`: cheap, from its state)
and whether a given proposal cannot help (`Detector.futile`): the failing check again with
nothing changed, a call that just failed proposed again unchanged, a read of what was just
read, an edit that changes nothing. Armed only while some pattern may refuse, so a reply is
held no longer than that. A refused reply is asked again with what was refused and why, the
next step the state suggests, and a call required (with its schema, for servers that ignore
`tool_choice`); the agent gets the new reply as if the model had made it first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from proxy.engine.detectors import Refusal
from proxy.engine.plan.reply import GatePlan, Refuser
from proxy.engine.plan.rules import Rules
from proxy.engine.plan.turn import Turn, held_retry, retry
from proxy.engine.reading.proposal import LEAVES_FILES, Proposal, propose
from proxy.engine.text.exchange import Edit, Translation
from proxy.engine.text.protocols import FORMS
from proxy.engine.text.salvage import offered_tools
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.wording import PREFIX

__all__ = ["block_gate", "refuser"]


def refuser(rules: Rules, turn: Turn, translation: Translation, fit: Callable[[str, str, str], str]) -> Refuser | None:
    """The judge of a reply's proposed calls, (tool, arguments JSON) each; None when no pattern
    may refuse anything in this state (nothing to hold the reply for). A pattern in shadow
    refuses nothing, but what the gate owns as its own evidence (`Refusal.owned`: a no-op edit)."""
    state, text = turn.state, turn.calls_as_text
    judges = [
        judge if rules.acts(pattern) else _owned(judge, halts=pattern.owned_halts)
        for pattern in rules.patterns
        if rules.acts(pattern) or pattern.gate_owned
        if (judge := pattern.refuser(state.detectors, state.repair, rules.options[pattern.name], text=text)) is not None
    ]
    if not judges:
        return None
    vocabulary = turn.tools.vocabulary
    context = RemedyContext(state.repair, vocabulary, fit, offered_tools(translation.tools))
    volatile = frozenset(rules.policy.loops.volatile_keys)

    def refuse(calls: Sequence[tuple[str, str]]) -> Refusal | None:
        for name, raw in calls:
            proposal = propose(name, raw, rules.classifier, volatile, alone=len(calls) == 1)
            for judge in judges:
                if (refusal := judge(proposal, context)) is not None:
                    return refusal
            if proposal.kind not in LEAVES_FILES:
                # the calls after it run on what it may have changed, and the state's "nothing has
                # changed since" no longer holds: `pip install cookiecutter` then the failing check,
                # refused as "only reads since", was judged wrong (corpus, Claude Code with
                # GLM-4.7-Flash, beeware__briefcase-2212 request 47: the install was the step needed)
                return None
        return None

    return refuse


def _owned(
    judge: Callable[[Proposal, RemedyContext], Refusal | None], *, halts: bool
) -> Callable[[Proposal, RemedyContext], Refusal | None]:
    """A shadow pattern's judge, kept to the refusals the gate owns; those hand the run back only
    where the pattern says they may (`Detector.owned_halts`)."""

    def owned(proposal: Proposal, context: RemedyContext) -> Refusal | None:
        refusal = judge(proposal, context)
        if refusal is None or not refusal.owned:
            return None
        return refusal if halts else replace(refusal, halts=False)

    return owned


def block_gate(rules: Rules, turn: Turn, role: str) -> GatePlan | None:
    """The block gate: a refused reply asked again, a call required (for an agent that writes its
    calls as text, one call in its own format)."""
    reply = rules.policy.reply
    form = FORMS.get(turn.state.protocol) if turn.calls_as_text else None
    if not (reply.block and (turn.levers.offered or form)):
        return None

    def refused(refusal: Refusal) -> Edit:
        text = f"{PREFIX} Your call was not run. {refusal.reason}\n{refusal.instead}"
        if form is not None:
            return retry(turn, role, f"{text}\nReply with {form}.")
        if (held := held_retry(turn, role, text, refusal.pinned)) is not None:  # the call, its known part held
            return held
        if refusal.tool is not None and refusal.tool in turn.levers.offered:
            return retry(turn, role, text, tool_choice=refusal.tool)  # the next step's tool, only
        return retry(turn, role, text, require_call=True)

    return GatePlan(lambda: retry(turn, role, f"{PREFIX} Your call was not run."), 1, refused)
