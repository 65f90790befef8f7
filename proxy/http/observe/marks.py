"""The `X-Repair-*` marks an answer carries, made from the request's record as it stands when the
answer's headers leave (a stream's leave with its first bytes: what is decided later reaches the
log, the metrics and the span, not the marks).

    X-Repair-Conversation   the conversation the analysis placed the request in
    X-Repair-Trips          the patterns that fired on this request, in planning order
    X-Repair-Arm            `treated` or `holdout`
    X-Repair-Retries        the gates that asked the upstream again, and how often (`action:1,done:2`)
    X-Repair-Outcome        a gate that gave up (`complete_unverified`, `complete_failing`,
                            `no_action`, `futile`), or `incomplete`: a hand-back (`outcome.MARKED`)
    X-Repair-Salvaged       how many tool calls written as text were turned into real calls
"""

from __future__ import annotations

from proxy.engine.text.identity import CONVERSATION_HEADER
from proxy.http.observe.outcome import MARKED, Again
from proxy.http.observe.record import Armed, Record, Retried, Salvaged

__all__ = [
    "ARM_HEADER",
    "CONVERSATION_HEADER",
    "OUTCOME_HEADER",
    "RETRIES_HEADER",
    "SALVAGED_HEADER",
    "TRIPS_HEADER",
    "marks",
]

OUTCOME_HEADER = "X-Repair-Outcome"
SALVAGED_HEADER = "X-Repair-Salvaged"
RETRIES_HEADER = "X-Repair-Retries"
TRIPS_HEADER = "X-Repair-Trips"
ARM_HEADER = "X-Repair-Arm"


def marks(record: Record) -> dict[str, str]:
    """The marks for an answer leaving now (none for a request the proxy did not analyse)."""
    decision = record.decision
    if decision is None:
        return {}
    out = {CONVERSATION_HEADER: decision.request.conversation}
    if decision.new_trips:
        out[TRIPS_HEADER] = ",".join(dict.fromkeys(t.pattern.name for t in decision.new_trips))
    retries: dict[str, int] = {}
    salvaged = None
    for event in record.events:
        if isinstance(event, Armed):
            out[ARM_HEADER] = event.arm
        elif isinstance(event, Retried) and event.gate is not None and event.why is Again.GATE:
            retries[event.gate.value] = retries.get(event.gate.value, 0) + 1
        elif isinstance(event, Salvaged):
            salvaged = str(event.calls)
    if retries:
        out[RETRIES_HEADER] = ",".join(f"{gate}:{n}" for gate, n in retries.items())
    if record.outcome in MARKED:
        out[OUTCOME_HEADER] = record.outcome.value
    if salvaged is not None:
        out[SALVAGED_HEADER] = salvaged
    return out
