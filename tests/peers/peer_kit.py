"""What the peer suites' cases are ported onto: a transcript in OpenAI chat form, the requests an
agent sends as it grows, and the loop trips our engine makes on them under the default policy.

A peer's verdict is a level ("is the agent stuck now?"); ours is an event (a pattern trips on the
request that carries the turn reaching its rung). A case names the part of the transcript its
verdict is about (`since`: the messages before it are context only), and our verdict is whether a
loop pattern tripped on a request carrying some of that part.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from proxy.dialects import CHAT, plan_offline
from proxy.engine.core import Engine
from proxy.engine.detectors import REGISTRY
from proxy.settings.policy import Policy, policy_from_mapping

LOOP_PATTERNS = frozenset(
    {
        "stuck_same_diagnostic",
        "repeated_error",
        "repeat_call",
        "repeat_failed_call",
        "repeat_output",
        "redone_edit",
        "read_stagnation",
        "ping_pong",
        "format_error_loop",
        "monologue",
        "excessive_polling",
        "no_effect",
        "refused_edits",
        "retread",
    }
)
"""The patterns that say "the agent is going round": a trip of any of them is our "stuck"."""
NOT_LOOPS = frozenset({"reverify_owed", "unmatched_edit", "pointless_call"})
"""Patterns about one step's worth (a check owed, an edit that cannot apply, a call that can do
nothing): a trip of theirs is recorded but is no verdict on a loop."""

SYSTEM = "You are a coding agent working in /workspace."


def default_policy_for_peers(overrides: dict[str, Any] | None = None) -> Policy:
    """The bundled default policy, as an operator's `extends = "default"` gets it."""
    return policy_from_mapping({"extends": "default", **(overrides or {})}, "<peers: default>")


def function(name: str, **properties: str) -> dict[str, Any]:
    """A tool schema: string (or other JSON type) properties, all required."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {
                "type": "object",
                "properties": {key: {"type": kind} for key, kind in properties.items()},
                "required": list(properties),
            },
        },
    }


class Convo:
    """A transcript that grows message by message, as an agent keeps it."""

    def __init__(self, task: str, tools: list[dict[str, Any]], prefix: str = "call") -> None:
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]
        self.tools = tools
        self.prefix = prefix
        self.ids = 0

    def _id(self) -> str:
        self.ids += 1
        return f"{self.prefix}_{self.ids:03d}"

    def call(self, name: str, arguments: dict[str, Any], result: str, text: str | None = None) -> Convo:
        """One assistant message making one tool call, and that call's result."""
        return self.parallel([(name, arguments, result)], text)

    def parallel(self, calls: list[tuple[str, dict[str, Any], str]], text: str | None = None) -> Convo:
        """One assistant message making these calls, and their results in order."""
        ids = [self._id() for _ in calls]
        self.messages.append(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {"id": i, "type": "function", "function": {"name": n, "arguments": orjson.dumps(a).decode()}}
                    for i, (n, a, _) in zip(ids, calls, strict=True)
                ],
            }
        )
        self.messages.extend(
            {"role": "tool", "tool_call_id": i, "content": r} for i, (_, _, r) in zip(ids, calls, strict=True)
        )
        return self

    def say(self, text: str) -> Convo:
        """A text-only assistant reply."""
        self.messages.append({"role": "assistant", "content": text})
        return self

    def user(self, text: str) -> Convo:
        self.messages.append({"role": "user", "content": text})
        return self

    @property
    def mark(self) -> int:
        """The number of messages so far: a window that starts here holds what is added next."""
        return len(self.messages)

    def copy(self) -> Convo:
        twin = Convo("", self.tools, self.prefix)
        twin.messages = copy.deepcopy(self.messages)
        twin.ids = self.ids
        return twin


@dataclass(frozen=True)
class Fired:
    sent: int
    """How many messages the request carried."""
    pattern: str
    action: str
    detail: str


def requests(messages: list[dict[str, Any]]) -> list[int]:
    """How many messages each request carries: one before each assistant message (the model wrote
    it in reply to everything before it), one after each user message (the agent asks the model
    to go on: two user messages in a row are two requests, the first answered by no reply), and
    one at the end (asking for the next step)."""
    cuts = {i for i, m in enumerate(messages) if m["role"] == "assistant" and i > 0}
    cuts |= {i + 1 for i, m in enumerate(messages) if m["role"] == "user" and i > 1}
    cuts.add(len(messages))
    return sorted(cuts)


def replay(convo: Convo, policy: Policy | None = None) -> list[Fired]:
    """Every request of the transcript, in order, through one engine (one proxy replica)."""
    engine = Engine.of(policy or default_policy_for_peers())
    fired: list[Fired] = []
    for cut in requests(convo.messages):
        body = {"model": "peer-model", "messages": convo.messages[:cut], "tools": convo.tools}
        planned = plan_offline(engine, CHAT, orjson.dumps(body), {})
        assert planned is not None, f"the engine could not read the request of {cut} messages"
        fired.extend(Fired(cut, t.pattern.name, t.action.value, t.detail) for t in planned.decision.new_trips)
    return fired


def loop_trips(convo: Convo, since: int = 0, policy: Policy | None = None) -> list[Fired]:
    """The loop trips on requests that carry some of the transcript past its first `since` messages."""
    return [f for f in replay(convo, policy) if f.pattern in LOOP_PATTERNS and f.sent > since]


@dataclass(frozen=True)
class Case:
    """One verdict of a peer's test, ported: the transcript, the part the verdict is about, the verdict."""

    id: str
    convo: Convo
    stuck: bool
    """The peer's verdict: True, it calls the agent stuck (or nudges it for a loop) here."""
    since: int = 0
    differs: str = ""
    """Why our verdict is not theirs (the case is a strict xfail); empty: we agree."""
    policy: dict[str, Any] | None = None
    """Overrides of our default policy, where the peer's case sets its own threshold."""
    by: tuple[str, ...] = ()
    """Where we agree that it is stuck: the patterns of ours that trip in the window (checked)."""

    def param(self) -> Any:
        marks = [pytest.mark.xfail(strict=True, reason=self.differs)] if self.differs else []
        return pytest.param(self, id=self.id, marks=marks)


def check(case: Case) -> None:
    """Our verdict is the peer's: a loop trip in the window exactly when they call it stuck."""
    policy = default_policy_for_peers(case.policy) if case.policy else None
    ours = loop_trips(case.convo, case.since, policy)
    shown = "; ".join(f"{f.pattern} ({f.action}) on the request of {f.sent} messages: {f.detail}" for f in ours)
    assert bool(ours) == case.stuck, f"they say {'stuck' if case.stuck else 'not stuck'}; we tripped: {shown or 'none'}"
    if case.by:
        assert sorted({f.pattern for f in ours}) == sorted(case.by), f"we agree, by other patterns: {shown}"


def registry_is_sorted_into_loops_or_not() -> bool:
    return {d.name for d in REGISTRY} == LOOP_PATTERNS | NOT_LOOPS
