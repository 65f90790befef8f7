"""Scenarios: JSON transcripts (tests/scenarios/*.json) and the trips they must and must not cause."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from chat import Chat

from proxy.engine import Engine
from proxy.fold import ConversationState
from proxy.policy import Policy, default_policy, policy_from_mapping
from proxy.statecache import StateCache
from proxy.tokens import TokenCounter

SCENARIOS = Path(__file__).parent / "scenarios"
TOKENS = TokenCounter()


@dataclass
class Scenario:
    name: str
    behaviour: str
    turns: list[list[dict[str, Any]]]
    expect: dict[str, Any]
    policy_raw: dict[str, Any]

    @property
    def policy(self) -> Policy:
        return policy_from_mapping(self.policy_raw, f"scenario {self.name}") if self.policy_raw else default_policy()

    def requests(self) -> list[bytes]:
        """Request k carries turns 1..k with their results, as the agent sends it."""
        chat = Chat()
        bodies = []
        for turn in self.turns:
            chat.turn(*[(c["tool"], c["args"], c["output"]) for c in turn])
            bodies.append(chat.bytes())
        return bodies

    def expected_trips(self, turn: int) -> list[list[str]]:
        return [list(t) for t in self.expect.get("trips", {}).get(str(turn), [])]


def load(name: str) -> Scenario:
    raw = orjson.loads((SCENARIOS / f"{name}.json").read_bytes())
    return Scenario(name, raw["behaviour"], raw["turns"], raw["expect"], raw.get("policy", {}))


def names() -> list[str]:
    return sorted(p.stem for p in SCENARIOS.glob("*.json"))


def engine(policy: Policy | None = None) -> Engine:
    cache: StateCache[ConversationState] = StateCache(1000, 3600)
    return Engine(policy or default_policy(), cache, TOKENS)
