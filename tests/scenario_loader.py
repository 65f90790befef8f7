"""Scenarios: JSON transcripts (tests/scenarios/*.json) and the trips they must and must not cause."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from chat import Chat, tool_schemas

from proxy.dialects import CHAT, Dialect, Planned, SpanMemory, plan_offline
from proxy.engine.core import Engine
from proxy.engine.plan.rules import Rules
from proxy.settings.kinds import Mode
from proxy.settings.policy import Policy, default_policy, policy_from_mapping

SCENARIOS = Path(__file__).parent / "scenarios"
MEMORY = None if __import__("os").environ.get("NO_SPAN_MEMORY") else SpanMemory()
"""As the server has one: rewrites reuse what the last one of the conversation found."""


@dataclass
class Scenario:
    name: str
    behaviour: str
    pattern: str
    """The pattern this scenario is about: it must trip it, or (a near miss) must not."""
    turns: list[Any]
    """Each a tool turn (a list of calls), {"say": text} (a text-only reply) or {"user": text}."""
    expect: dict[str, Any]
    policy_raw: dict[str, Any]
    tools: list[str] | None

    @property
    def policy(self) -> Policy:
        return policy_from_mapping(self.policy_raw, f"scenario {self.name}") if self.policy_raw else default_policy()

    def requests(self) -> list[bytes]:
        """The requests the agent sends: one after each tool turn and after each user message."""
        return [body for body, _ in self.requests_with_turns()]

    def requests_with_turns(self) -> list[tuple[bytes, range]]:
        """Each request with the turn ordinals it carries for the first time."""
        chat = Chat(tools=tool_schemas(self.tools) if self.tools else None)
        out: list[tuple[bytes, range]] = []
        ordinal = sent = 0
        for step in self.turns:
            if isinstance(step, dict) and "user" in step:
                chat.user(step["user"])
            elif isinstance(step, dict) and "say" in step:
                chat.say(step["say"])
                ordinal += 1
                continue
            else:
                chat.turn(*[(c["tool"], c["args"], c["output"]) for c in step])
                ordinal += 1
            out.append((chat.bytes(), range(sent + 1, ordinal + 1)))
            sent = ordinal
        return out

    def expected_trips(self, turn: int) -> list[list[str]]:
        return [list(t) for t in self.expect.get("trips", {}).get(str(turn), [])]

    def expected_for(self, turns: range) -> list[list[str]]:
        return [trip for turn in turns for trip in self.expected_trips(turn)]

    def speaks(self, pattern: str) -> bool:
        """`pattern` acts under this scenario's policy (a pattern in shadow records and says nothing)."""
        return Rules.of(self.policy).options[pattern].mode is Mode.ACT

    @property
    def trips_its_pattern(self) -> bool:
        return any(t[0] == self.pattern for trips in self.expect.get("trips", {}).values() for t in trips)


def load(name: str) -> Scenario:
    raw = orjson.loads((SCENARIOS / f"{name}.json").read_bytes())
    return Scenario(
        name, raw["behaviour"], raw["pattern"], raw["turns"], raw["expect"], raw.get("policy", {}), raw.get("tools")
    )


def names() -> list[str]:
    return sorted(p.stem for p in SCENARIOS.glob("*.json"))


def acting(*patterns: str) -> Policy:
    """The embedded policy with `patterns` switched from shadow to act: for tests of what a
    pattern does when it speaks (its remedy, its rungs), not of the defaults."""
    return policy_from_mapping({"patterns": {p: {"mode": "act"} for p in patterns}}, "tests: acting")


def engine(policy: Policy | None = None) -> Engine:
    """An engine of its own under `policy` (default: the embedded one)."""
    return Engine.of(policy or default_policy())


def analyse(eng: Engine, body: bytes, dialect: Dialect = CHAT, headers: dict[str, str] | None = None) -> Planned | None:
    """One request body through the engine, offline: its decision and the bytes it would send."""
    return plan_offline(eng, dialect, body, headers or {}, memory=MEMORY)
