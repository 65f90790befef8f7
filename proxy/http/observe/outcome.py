"""The one enum of how a request ends (`Outcome`), and of what failed on the proxy's side and
was got round (`Fault`): what the request's record (`record.py`) says in types, and the
observer turns into the log line's `end`, the metrics' labels, the span's outcome and
`X-Repair-Outcome`.
"""

from __future__ import annotations

import enum

__all__ = ["GAVE_UP", "KEPT", "MARKED", "Again", "Fault", "Outcome"]


class Outcome(enum.Enum):
    """How a request ended: the request log's `end`, the span's `repair_proxy.outcome`, the
    `outcome` label of `repair_proxy_reply_outcomes`, and `X-Repair-Outcome` (`header`)."""

    # Refused by the proxy itself, before anything went upstream.
    PATH_REFUSED = "path_refused"
    NO_KEY = "no_key"
    UNKNOWN_KEY = "unknown_key"
    BODY_TIMEOUT = "body_timeout"
    BODY_TOO_LARGE = "body_too_large"
    # The analysis gave up: the request went up as it came (kept unless its relay ends otherwise).
    ANALYSIS_ABANDONED = "analysis_abandoned"
    ANALYSIS_FAILED = "analysis_failed"
    CATCHING_UP = "catching_up"
    """The conversation's state was far behind the request (first seen long): it went up as it
    came, and the conversation is caught up beside the traffic (`runtime.catchup`)."""
    # Forwarded or delivered whole.
    COMPLETE = "complete"
    """The reply as it came (its calls made real when it wrote them as text)."""
    COMPLETE_UNVERIFIED = "complete_unverified"
    """The done gate gave up: the model stopped though a re-run of the failing check was owed."""
    COMPLETE_FAILING = "complete_failing"
    """The finish gate gave up: the model finished while the failing check still fails."""
    NO_ACTION = "no_action"
    """The action gate gave up: the model's own reply, which does not act."""
    FUTILE = "futile"
    """The block gate gave up: the model's own reply, its futile call and all."""
    HANDBACK = "incomplete"
    """Handed back: the run stopped, the agent told why (the plan's halt, or the stop rung)."""
    UPSTREAM_ERROR = "upstream_error"
    """The reply stage relayed the upstream's error status as it came."""
    # A relayed body that did not end well.
    CLIENT_GONE = "client_gone"
    """The agent went away; the upstream response was closed (it stops generating)."""
    UPSTREAM_IDLE = "upstream_idle_timeout"
    """The upstream went silent past the idle timeout: the agent's connection was cut (or, before
    anything went out, it got the error)."""
    UPSTREAM_BROKE = "upstream_broke"
    """The upstream's body broke off: likewise."""
    # The upstream failed before its headers: the agent got the proxy's error.
    UPSTREAM_CONNECT_TIMEOUT = "upstream_connect_timeout"
    UPSTREAM_TIMEOUT = "upstream_timeout"
    UPSTREAM_UNREACHABLE = "upstream_unreachable"
    ERROR = "error"
    """The handler raised (a bug): answered 500."""


GAVE_UP = frozenset({Outcome.COMPLETE_UNVERIFIED, Outcome.COMPLETE_FAILING, Outcome.NO_ACTION, Outcome.FUTILE})
"""A gate gave up on the reply (counted in `repair_proxy_reply_outcomes`)."""
MARKED = GAVE_UP | {Outcome.HANDBACK}
"""The outcomes `X-Repair-Outcome` says (its value is the outcome's): a gate that gave up, or
the hand-back (`incomplete`)."""
KEPT = frozenset({Outcome.ANALYSIS_ABANDONED, Outcome.ANALYSIS_FAILED, Outcome.CATCHING_UP})
"""Outcomes a complete relay does not overwrite: the request went up untouched because of them."""


class Again(enum.Enum):
    """Why the upstream is asked again for one agent request (the values are the log's events)."""

    GATE = "repair_gate"
    """A gate held the reply: its retry (one extra generation)."""
    SCHEMA_REFUSED = "repair_schema_refused"
    """The server took no call schema: the same request without it (nothing was generated)."""
    REDRAWN = "repair_call_unreadable"
    """The server could not read the reply our schema let the model write: the same retry, its
    seed moved on (nothing reached the agent)."""


class Fault(enum.Enum):
    """Something that failed on the proxy's side and was got round (fail-open)."""

    ANALYSIS_FAILED = "analysis_failed"
    ANALYSIS_ABANDONED = "analysis_abandoned"
    CATCHING_UP = "catching_up"
    """The request's conversation is read beside the traffic (its request went up as it came)."""
    NOT_ANALYSABLE = "not_analysable"
    """Not JSON, no transcript, or (Responses) history kept upstream by `previous_response_id`."""
    READ_FAILED = "read_failed"
    SALVAGE_FAILED = "salvage_failed"
    HANDBACK_UNWRITABLE = "handback_unwritable"
    STORE_FAILED = "store_failed"
    STORE_FAILING = "store_failing"
    USAGE_UNREADABLE = "usage_unreadable"
    OBSERVING_FAILED = "observing_failed"
    """A hook of the upstream session's tracing raised (the request went on)."""
