"""The reply stage's decisions as a table, with no server: an attempt and what it got back ->
relay, deliver (this reply or the first) or retry."""

from __future__ import annotations

import pytest

from proxy.engine.detectors import Refusal
from proxy.engine.plan.handback import Handback
from proxy.engine.plan.reply import Gate, GatePlan, Judgement, ReplyRules
from proxy.engine.text.exchange import Edit
from proxy.http.observe.outcome import Again, Outcome
from proxy.http.observe.record import Retried
from proxy.http.reply.steps import (
    STOP_AFTER,
    Attempt,
    Deliver,
    Relay,
    Retry,
    Step,
    Stop,
    after_failure,
    after_reply,
    after_status,
    unreadable_as_call,
)

RULES = ReplyRules(gates={gate: GatePlan(Edit, 2) for gate in Gate})
OWN = Attempt()
"""The agent's own request: no gate, nothing spent."""
OWN_WITH_SCHEMA = Attempt(schema=True)
"""The agent's request with the force rung's call schema."""
RETRY = OWN.retried(Gate.ACTION, schema=True)
"""The action gate's first retry, carrying the call's schema."""
PLAIN_RETRY = Attempt(Gate.ACTION, schema=False, plain=True, retries={Gate.ACTION: 1}, spent=1, first=True)


def again(attempt: Attempt, gate: Gate, judgement: Judgement | None = None, acts: bool = False) -> Retry:
    """The step that asks again through `gate`: its next attempt is the gate's retry (no call
    schema in these rules' requests), carrying why the block gate held the reply, and the record
    gets the retry."""
    refusal = None if judgement is None else judgement.refusal
    acts = acts if judgement is None else judgement.acts
    ahead = attempt.retried(gate, schema=False, first_acts=acts, refusal=refusal)
    return Retry(ahead, Retried(Again.GATE, gate, ahead.retries[gate]))


@pytest.mark.parametrize(
    ("attempt", "status", "encoded", "step"),
    [
        (OWN, 200, False, None),
        (OWN, 200, True, Relay(Outcome.COMPLETE)),
        (OWN, 500, False, Relay(Outcome.UPSTREAM_ERROR)),
        (OWN, 400, False, Relay(Outcome.UPSTREAM_ERROR)),
        (OWN_WITH_SCHEMA, 400, False, Retry(OWN_WITH_SCHEMA.without_schema(), Retried(Again.SCHEMA_REFUSED))),
        (RETRY, 400, False, Retry(RETRY.without_schema(), Retried(Again.SCHEMA_REFUSED, Gate.ACTION))),
        (OWN_WITH_SCHEMA, 500, False, Retry(OWN_WITH_SCHEMA.without_schema(), Retried(Again.SCHEMA_REFUSED))),
        (RETRY, 500, False, Deliver(Outcome.NO_ACTION, first=True, gate=Gate.ACTION)),
        (OWN.retried(Gate.BLOCK, schema=True), 503, False, Deliver(Outcome.FUTILE, first=True, gate=Gate.BLOCK)),
        (PLAIN_RETRY, 400, False, Deliver(Outcome.NO_ACTION, first=True, gate=Gate.ACTION)),
        (PLAIN_RETRY, 200, False, None),
        (RETRY, 200, True, Deliver(Outcome.NO_ACTION, first=True, gate=Gate.ACTION)),
    ],
    ids=[
        "ok: read it",
        "compressed: relayed unread",
        "the agent's request failed: relayed as it came",
        "refused with no schema of ours: relayed as it came",
        "our call schema refused: the same request without it, free",
        "a retry's schema refused: the same retry without it, free",
        "the force rung's request failed at the server: sent again as the agent's own would go",
        "a retry with our schema failed at the server: the first reply, not a prose retry",
        "the block gate's retry failed at the server: the model's own call",
        "our plain retry refused: the first reply, as without the gate",
        "a plain retry answered: read it",
        "a retry answered compressed: left unread, the first reply",
    ],
)
def test_after_status(attempt: Attempt, status: int, encoded: bool, step: Step | None) -> None:
    assert after_status(attempt, status, encoded) == step


REDRAWN = RETRY.drawn_again()
"""The action gate's retry, drawn again after the server could not read its reply."""


@pytest.mark.parametrize(
    ("attempt", "status", "step"),
    [
        (RETRY, 500, Retry(RETRY.drawn_again(), Retried(Again.REDRAWN, Gate.ACTION))),
        (
            OWN.retried(Gate.BLOCK, schema=True),
            500,
            Retry(OWN.retried(Gate.BLOCK, schema=True).drawn_again(), Retried(Again.REDRAWN, Gate.BLOCK)),
        ),
        (REDRAWN, 500, Deliver(Outcome.NO_ACTION, first=True, gate=Gate.ACTION)),
        (PLAIN_RETRY, 500, Deliver(Outcome.NO_ACTION, first=True, gate=Gate.ACTION)),
        (OWN_WITH_SCHEMA, 500, Retry(OWN_WITH_SCHEMA.without_schema(), Retried(Again.SCHEMA_REFUSED))),
        (RETRY, 400, Retry(RETRY.without_schema(), Retried(Again.SCHEMA_REFUSED, Gate.ACTION))),
        (REDRAWN.retried(Gate.ACTION, schema=True), 500, Deliver(Outcome.NO_ACTION, first=True, gate=Gate.ACTION)),
    ],
    ids=[
        "a retry's reply the server could not read: the same retry drawn again",
        "the block gate's retry, the same",
        "unreadable when drawn again too: the first reply, never a loop",
        "a retry with no schema of ours: not ours to read, the first reply",
        "the agent's own request at the force rung: without the schema, as before",
        "a 4xx is a refusal, whatever it says: without the schema",
        "one redraw per agent request: a later retry's unreadable reply ends its gate",
    ],
)
def test_after_status_when_the_server_could_not_read_the_reply_it_drew(
    attempt: Attempt, status: int, step: Step
) -> None:
    assert after_status(attempt, status, False, unreadable=True) == step


@pytest.mark.parametrize(
    ("body", "unreadable"),
    [
        (
            b'{"error":{"code":500,"message":"The model produced output that does not match the expected'
            b' peg-native format","type":"server_error"}}',
            True,
        ),
        (b'{"error":{"code":500,"message":"slot unavailable","type":"server_error"}}', False),
        (b"", False),
        (b"<html>502 Bad Gateway</html>", False),
    ],
    ids=["llama.cpp's parse failure", "another server error", "no body", "a gateway's page"],
)
def test_unreadable_as_call(body: bytes, unreadable: bool) -> None:
    assert unreadable_as_call(body) is unreadable


@pytest.mark.parametrize(
    ("attempt", "step"),
    [
        (OWN, None),
        (OWN_WITH_SCHEMA, None),
        (RETRY, Deliver(Outcome.NO_ACTION, first=True, gate=Gate.ACTION)),
        (OWN.retried(Gate.BLOCK, schema=False), Deliver(Outcome.FUTILE, first=True, gate=Gate.BLOCK)),
    ],
    ids=[
        "the agent's request failed: its failure is the agent's",
        "with our schema, the same",
        "our retry failed: the first reply, as when refused",
        "the block gate's retry failed: the model's own call",
    ],
)
def test_after_failure(attempt: Attempt, step: Step | None) -> None:
    assert after_failure(attempt) == step


@pytest.mark.parametrize(
    ("attempt", "gate", "budget", "step"),
    [
        (OWN, None, 1, Deliver(Outcome.COMPLETE)),
        (OWN, Gate.ACTION, 1, again(OWN, Gate.ACTION)),
        (OWN, Gate.ACTION, 0, Deliver(Outcome.NO_ACTION, gate=Gate.ACTION)),
        (RETRY, Gate.ACTION, 1, Deliver(Outcome.NO_ACTION, first=True, gate=Gate.ACTION)),
        (RETRY, Gate.ACTION, 2, again(RETRY, Gate.ACTION)),
        (RETRY, Gate.DONE, 1, Deliver(Outcome.COMPLETE_UNVERIFIED, gate=Gate.DONE)),
        (RETRY, Gate.FINISH, 2, again(RETRY, Gate.FINISH)),
        (RETRY.retried(Gate.ACTION, True), Gate.ACTION, 5, Deliver(Outcome.NO_ACTION, first=True, gate=Gate.ACTION)),
        (RETRY, Gate.BLOCK, 1, Deliver(Outcome.FUTILE, first=True, gate=Gate.BLOCK)),
        (RETRY, None, 1, Deliver(Outcome.COMPLETE)),
    ],
    ids=[
        "nothing holds it: deliver",
        "a gate holds it, budget left: retry",
        "no budget at all: delivered as its gate gives up",
        "budget spent: the action gate gives up with the model's first reply",
        "budget left after one retry: retry again",
        "the done gate gives up with this reply",
        "another gate, budget left: retry",
        "the gate's own tries spent, whatever the budget",
        "the block gate gives up with the model's first reply",
        "a retry's reply that nothing holds: deliver it",
    ],
)
def test_after_reply(attempt: Attempt, gate: Gate | None, budget: int, step: Step) -> None:
    assert after_reply(attempt, Judgement(gate), RULES, budget) == step


def test_a_retry_spends_one_generation_and_a_schema_refusal_none() -> None:
    assert (RETRY.spent, RETRY.retries, RETRY.gate) == (1, {Gate.ACTION: 1}, Gate.ACTION)
    plain = RETRY.without_schema()
    assert (plain.spent, plain.schema, plain.plain) == (1, False, True)
    assert plain.retried(Gate.FINISH, schema=True).schema is False, "once refused, no schema again"


BLOCK_RETRY = OWN.retried(Gate.BLOCK, schema=True)
"""The block gate's re-ask after a futile call."""


@pytest.mark.parametrize(
    ("judgement", "step"),
    [
        (Judgement(None, acts=True), Deliver(Outcome.COMPLETE)),
        (Judgement(None, acts=False), Deliver(Outcome.FUTILE, first=True, gate=Gate.BLOCK)),
        (Judgement(Gate.ACTION, acts=False), Deliver(Outcome.FUTILE, first=True, gate=Gate.BLOCK)),
        (Judgement(Gate.BLOCK, acts=True), again(BLOCK_RETRY, Gate.BLOCK, acts=True)),
    ],
    ids=[
        "the re-ask answered with another call: deliver it",
        "the re-ask answered with no call: the model's own call, marked futile, never an empty reply",
        "the re-ask answered with prose the action gate would hold: the same, budget or not",
        "the re-ask futile too, a budget of 3 left: asked again (with 1, the first reply: above)",
    ],
)
def test_after_a_block_the_agent_never_gets_a_reply_that_does_less(judgement: Judgement, step: Step) -> None:
    """Seen on the recovery bench (Qwen2.5-Coder-1.5B, seed 0): refused re-runs were answered
    with empty replies 23 times in 51 turns, and the agents got them."""
    assert after_reply(BLOCK_RETRY, judgement, RULES, budget=3) == step


def test_when_block_gives_up_after_an_empty_first_reply_the_agent_gets_the_call() -> None:
    """The model answered empty, the action gate asked again (the one generation of budget), and
    the answer was a futile call: giving up with the first reply would hand the agent the empty
    one. Seen on the recovery bench, single-bash style: 5 of 8 turns marked futile had no call."""
    after_empty = OWN.retried(Gate.ACTION, schema=True, first_acts=False)
    assert after_reply(after_empty, Judgement(Gate.BLOCK, acts=True), RULES, budget=1) == Deliver(
        Outcome.FUTILE, first=False, gate=Gate.BLOCK
    )
    after_call = OWN.retried(Gate.BLOCK, schema=True, first_acts=True)
    assert after_reply(after_call, Judgement(Gate.BLOCK, acts=True), RULES, budget=1) == Deliver(
        Outcome.FUTILE, first=True, gate=Gate.BLOCK
    )


STOPPING = ReplyRules(gates=RULES.gates, stop=lambda refusal: Handback("", refusal.pattern, None, "c", 1))
"""The rules with the stop rung armed (`reply.futile_again = "handback"`, the default)."""
BLOCK_REASK = OWN.retried(Gate.BLOCK, schema=True)
"""The block gate's re-ask after it refused the model's call."""


def _refused(times: int = STOP_AFTER, *, halts: bool = True) -> Judgement:
    """The block gate's judgement of a call made in vain `times` in a row before (`halts`: False for
    the gate's own refusal while its pattern is in shadow)."""
    refusal = Refusal("stuck_same_diagnostic", "why", "instead", times=times, owned=not halts, halts=halts)
    return Judgement(Gate.BLOCK, refusal=refusal, acts=True)


@pytest.mark.parametrize(
    ("attempt", "judgement", "rules", "budget", "step"),
    [
        (BLOCK_REASK, _refused(), STOPPING, 1, Stop()),
        (BLOCK_REASK, _refused(), STOPPING, 3, Stop()),
        (BLOCK_REASK, _refused(times=1), STOPPING, 1, Deliver(Outcome.FUTILE, True, Gate.BLOCK)),
        (BLOCK_REASK, _refused(times=3, halts=False), STOPPING, 1, Deliver(Outcome.FUTILE, True, Gate.BLOCK)),
        (BLOCK_REASK, _refused(), RULES, 1, Deliver(Outcome.FUTILE, first=True, gate=Gate.BLOCK)),
        (BLOCK_REASK, Judgement(None, acts=True), STOPPING, 1, Deliver(Outcome.COMPLETE)),
        (OWN.retried(Gate.ACTION, schema=True, first_acts=False), _refused(), STOPPING, 1, Stop()),
        (OWN.retried(Gate.FINISH, schema=True), _refused(), STOPPING, 1, Stop()),
        (
            OWN.retried(Gate.ACTION, schema=True, first_acts=False),
            _refused(times=1),
            STOPPING,
            1,
            Deliver(Outcome.FUTILE, gate=Gate.BLOCK),
        ),
        (
            OWN.retried(Gate.ACTION, schema=True, first_acts=False),
            _refused(),
            RULES,
            1,
            Deliver(Outcome.FUTILE, gate=Gate.BLOCK),
        ),
        (OWN, _refused(), STOPPING, 1, again(OWN, Gate.BLOCK, _refused())),
    ],
    ids=[
        "told why, the model proposes a call refused again, made in vain twice before: the hand-back",
        "the same, whatever budget is left: asking a third time is a loop",
        "a refused call made in vain once only: its first reply passes marked, no hand-back yet",
        "the gate's own refusal while its pattern is in shadow: its first reply passes marked, never a hand-back",
        "futile_again = pass: the model's first reply, marked",
        "a call that can help: delivered",
        "the action gate's retry after a reply with no call, answered with a call made in vain twice: the hand-back",
        "the finish gate's retry answered with a call made in vain twice: the hand-back",
        "the action gate's retry answered with a call made in vain once: that call, marked, no hand-back yet",
        "futile_again = pass, after the action gate: that call, marked (the first reply made none)",
        "the agent's own request proposing it: refused and asked again first",
    ],
)
def test_the_stop_rung_only_for_a_model_asked_again_that_proposes_a_call_made_in_vain(
    attempt: Attempt, judgement: Judgement, rules: ReplyRules, budget: int, step: Step
) -> None:
    assert after_reply(attempt, judgement, rules, budget) == step
