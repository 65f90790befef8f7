"""The reply stage's decisions, as a table: what to do with what an attempt got back.

    the attempt (which gate asked for it, what it carried, what was spent)
      + the upstream's status, its failure, or the judgement of its reply
      -> Relay     pass the upstream's response through as it came
         Deliver   give the agent this reply, or the first one, ending the request as its
                   `Outcome` says
         Stop      give the agent the hand-back instead: asked again (by any gate), the model
                   proposed a call the block gate refuses, one already made in vain
                   (`reply.futile_again`)
         Retry     ask the upstream again, as its next `Attempt` says: through a gate (one extra
                   generation), the same request without the call schema a server refused
                   (nothing was generated), or a gate's retry drawn again, when the server could
                   not read the reply our schema let the model write (nothing reached the agent);
                   with the event the request's record keeps of it

Pure: no I/O, no aiohttp, tested as a table (tests/unit/test_reply_steps.py). The loop in
`stage.py` only sends, reads and answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from proxy.engine.detectors import Refusal
from proxy.engine.plan.reply import Gate, Judgement, ReplyRules
from proxy.http.observe.outcome import Again, Outcome
from proxy.http.observe.record import Retried

__all__ = [
    "GIVEN_UP",
    "STOP_AFTER",
    "Attempt",
    "Deliver",
    "Relay",
    "Retry",
    "Step",
    "Stop",
    "after_failure",
    "after_reply",
    "after_status",
    "reads_error",
    "unreadable_as_call",
]


GIVEN_UP: Mapping[Gate, Outcome] = {
    Gate.DONE: Outcome.COMPLETE_UNVERIFIED,
    Gate.FINISH: Outcome.COMPLETE_FAILING,
    Gate.ACTION: Outcome.NO_ACTION,
    Gate.BLOCK: Outcome.FUTILE,
}
"""What a request ends as when its gate gives up (or our retry is refused)."""
STOP_AFTER = 2
"""The stop rung hands a run back only when the call the model proposes, asked again by a gate,
was already made in vain this many times in a row (`Refusal.times`): a model that re-runs a test
once after it failed, refused and asked again, proposing that run again, is not yet a model that
loops; one that answers a refused sed with the test it has seen fail the same way three times,
or the sed sed rejected twice, is; so is one asked for a call after a reply that made none
(the action gate) or finished while the check fails (the finish gate) that answers with an edit
changing nothing, its third (recovery bench, OpenHands style, bank seed 1 at 16128d8: the
editor's `str_replace` with `new_str` equal to `old_str`, five times, four of them answers to a
gate's retry that reached the agent)."""
_FIRST_REPLY = frozenset({Gate.ACTION, Gate.BLOCK})
"""Gates that give up with the model's first reply, not one it gave under the gate's pressure."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One request sent upstream for the agent's request."""

    gate: Gate | None = None
    """The gate whose retry this is; None: the agent's own request."""
    schema: bool = False
    """It carries a call schema (structured output)."""
    plain: bool = False
    """A call schema was refused: none is sent again for this agent request."""
    retries: Mapping[Gate, int] = field(default_factory=dict)
    """Retries each gate has asked for so far."""
    spent: int = 0
    """Extra generations spent so far (every gate's retries together)."""
    first: bool = False
    """A reply was held before this one (the model's own, from the agent's request)."""
    first_acts: bool = True
    """That first reply makes a call."""
    redrawn: bool = False
    """A reply the server could not read was drawn again, once, for this agent request."""
    refusal: Refusal | None = None
    """Why the block gate holds the reply this retry asks again for."""

    def retried(self, gate: Gate, schema: bool, first_acts: bool = True, refusal: Refusal | None = None) -> Attempt:
        """The attempt a gate's retry makes (`first_acts`: whether the reply held first calls)."""
        retries = {**self.retries, gate: self.retries.get(gate, 0) + 1}
        acts = self.first_acts if self.first else first_acts
        schema = schema and not self.plain
        return Attempt(gate, schema, self.plain, retries, self.spent + 1, True, acts, self.redrawn, refusal)

    def without_schema(self) -> Attempt:
        """The same attempt sent again without its call schema, and none after it."""
        return replace(self, schema=False, plain=True)

    def drawn_again(self) -> Attempt:
        """The same retry sent again with the next seed (none after it is drawn again)."""
        return replace(self, redrawn=True)


@dataclass(frozen=True, slots=True)
class Relay:
    """Pass the upstream's response through as it came; a complete relay ends as `end` says."""

    end: Outcome


@dataclass(frozen=True, slots=True)
class Deliver:
    end: Outcome
    first: bool = False
    """The first reply held (the model's own), not this one."""
    gate: Gate | None = None
    """The gate that gave up on it, if one did."""


@dataclass(frozen=True, slots=True)
class Retry:
    next: Attempt
    """The attempt to send: its gate (None: the agent's own request again, without its refused
    call schema), what it carries, what is spent (a schema refused generated nothing; a reply the
    server could not read reached no one); drawn again, its seed moved on."""
    event: Retried
    """Why, as the request's record keeps it."""


@dataclass(frozen=True, slots=True)
class Stop:
    """The hand-back instead of the reply (the stop rung)."""

    end: Outcome = Outcome.HANDBACK


Step = Relay | Deliver | Retry | Stop


def after_status(
    attempt: Attempt, status: int, encoded: bool, unreadable: bool = False
) -> Relay | Deliver | Retry | None:
    """Before reading the reply: what an error status or an encoded body means for this
    attempt; None: read the reply.

    A request carrying our call schema refused (4xx) generated nothing: it goes again without
    the schema, free. A server error (5xx) may come after the generation: a retry of ours that
    errs ends its gate with the first reply, as when it cannot be reached; sent again without
    the schema it would come back as prose. One 5xx is read (`unreadable`, see
    `unreadable_as_call`): the server generated the call our schema asked for and then could not
    parse it (llama.cpp's grammar lets through a JSON escape its parser rejects, `\\'` in a held
    `sed` script: seen on the recovery bench, and the same request drawn with another seed was
    read); the retry goes once more with the next seed. The agent's own request, which carries
    the schema only at the force rung, goes again without it: what it would have sent."""
    if status >= 400:
        if unreadable and attempt.gate is not None and reads_error(attempt, status):
            return Retry(attempt.drawn_again(), Retried(Again.REDRAWN, attempt.gate))  # the same retry, drawn again
        if attempt.schema and not attempt.plain and (status < 500 or attempt.gate is None):
            return Retry(
                attempt.without_schema(), Retried(Again.SCHEMA_REFUSED, attempt.gate)
            )  # the server takes no call schema
        if attempt.gate is not None:  # our retry refused: the agent gets what it would have had
            return Deliver(GIVEN_UP[attempt.gate], first=True, gate=attempt.gate)
        return Relay(Outcome.UPSTREAM_ERROR)
    if encoded:  # a compressed body is never read: relayed as it is, or a retry's left unused
        return Relay(Outcome.COMPLETE) if attempt.gate is None else Deliver(GIVEN_UP[attempt.gate], True, attempt.gate)
    return None


_UNREADABLE = b"The model produced output that does not match the expected"
"""llama.cpp's error (`common/chat.cpp`) when the reply does not parse as its chat format (with a
`response_format` schema, whether or not the request has `tools`)."""


def reads_error(attempt: Attempt, status: int) -> bool:
    """A server error on this attempt is read for its reason (`unreadable_as_call`): a gate's
    retry carrying our call schema, not drawn again yet. Any other error is not ours to read."""
    return status >= 500 and attempt.gate is not None and attempt.schema and not attempt.redrawn


def unreadable_as_call(body: bytes) -> bool:
    """A server error's body says the server could not read the model's reply as a call."""
    return _UNREADABLE in body


def after_failure(attempt: Attempt) -> Deliver | None:
    """The upstream could not be reached, went silent or broke off: our retry's failure ends its
    gate with the first reply, as a refusal does; None: the agent's own request failed (its error
    is the agent's)."""
    return Deliver(GIVEN_UP[attempt.gate], first=True, gate=attempt.gate) if attempt.gate is not None else None


def after_reply(attempt: Attempt, judgement: Judgement, rules: ReplyRules, budget: int) -> Step:
    """Once the reply is judged: deliver it, or ask again through the gate that holds it while
    the gate has tries left and the agent request's budget of extra generations allows."""
    gate = judgement.gate
    if gate is Gate.BLOCK and rules.stop is not None and _again(attempt, judgement):
        return Stop()  # asked again, the model proposed a call made in vain before
    if attempt.gate is Gate.BLOCK and not judgement.acts:
        # Refused a futile call, the model answered with none (an empty reply, prose): worse
        # than the call it was asked to replace. The agent gets the model's own reply.
        return Deliver(Outcome.FUTILE, first=True, gate=Gate.BLOCK)
    if gate is None:
        return Deliver(Outcome.COMPLETE)
    if attempt.retries.get(gate, 0) >= rules.gates[gate].max_attempts or attempt.spent >= budget:
        # The block gate gives up with the model's first reply only when that one calls: after
        # an empty reply the action gate asked again for, the futile call is still more than nothing.
        first = attempt.first and gate in _FIRST_REPLY and (gate is not Gate.BLOCK or attempt.first_acts)
        return Deliver(GIVEN_UP[gate], first=first, gate=gate)
    schema = rules.gates[gate].edit_for(judgement.refusal).call_schema is not None
    ahead = attempt.retried(gate, schema, judgement.acts, judgement.refusal)
    return Retry(ahead, Retried(Again.GATE, gate, ahead.retries[gate]))


def _again(attempt: Attempt, judgement: Judgement) -> bool:
    """The reply to a gate's retry proposes a call the block rung refuses, one already made in
    vain `STOP_AFTER` times in a row: asked again (told why its own call cannot help, or asked
    for a call at all), the model answered with one it has seen fail (the same one, or the other
    of two it alternates between). The agent's own request is never handed back on its first
    reply: that reply is refused and asked again first; nor on a refusal that does not halt (the
    gate's own, while its pattern is in shadow: `Refusal.halts`)."""
    refusal = judgement.refusal
    return attempt.gate is not None and refusal is not None and refusal.halts and refusal.times >= STOP_AFTER
