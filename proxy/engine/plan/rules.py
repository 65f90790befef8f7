"""A policy compiled for the engine: its classifier, the patterns and every pattern's ladder,
checked once.

A policy may tune any pattern under `[patterns.<name>]`; a pattern it leaves out keeps the
default ladder its detector file declares. A name no detector has is refused here, naming
the policy file and the key. `Rules` is what the fold asks of a policy (`state.patterns.FoldRules`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from proxy.engine.detectors import BY_NAME, REGISTRY, Pattern
from proxy.engine.reading.classify import Classifier
from proxy.settings.policy import Ladder, Policy
from proxy.settings.problems import ConfigError, ConfigProblem

__all__ = ["Rules"]


@dataclass(frozen=True, slots=True)
class Rules:
    policy: Policy
    classifier: Classifier
    ladders: Mapping[str, Ladder]
    """Every registered pattern's ladder: the policy's, else the detector's default."""
    patterns: tuple[Pattern, ...] = REGISTRY
    """Every pattern, in planning order."""

    @classmethod
    def of(cls, policy: Policy) -> Rules:
        known = {d.name for d in REGISTRY}
        unknown = sorted(set(policy.patterns) - known)
        if unknown:
            names = ", ".join(sorted(known))
            raise ConfigError(
                [ConfigProblem(policy.source, f"patterns.{n}", f"no such pattern (known: {names})") for n in unknown]
            )
        ladders = {d.name: policy.patterns.get(d.name, d.ladder) for d in REGISTRY}
        return cls(policy, Classifier(policy.classify), ladders)

    @property
    def episodic(self) -> frozenset[str]:
        return frozenset(p.name for p in self.patterns if p.episodic)

    def pattern(self, name: str) -> Pattern:
        return BY_NAME[name]
