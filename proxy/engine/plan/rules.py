"""A policy compiled for the engine: its classifier, the patterns and every pattern's options,
checked once.

A policy may tune any pattern under `[patterns.<name>]` (its ladder and its own options); a
pattern it leaves out keeps the defaults its detector file declares. A name no detector has,
or a value its detector refuses, is refused here, every problem naming the policy file and
the key. `Rules` is what the fold asks of a policy (`state.patterns.FoldRules`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from proxy.engine.detectors import BY_NAME, REGISTRY, Pattern
from proxy.engine.reading.classify import Classifier
from proxy.settings.kinds import Mode
from proxy.settings.policy import Ladder, Policy
from proxy.settings.problems import ConfigError, ConfigProblem

__all__ = ["Rules"]


@dataclass(frozen=True, slots=True)
class Rules:
    policy: Policy
    classifier: Classifier
    options: Mapping[str, Ladder]
    """Every registered pattern's options (its ladder and its own knobs): the policy's table laid
    over the detector's defaults."""
    patterns: tuple[Pattern, ...] = REGISTRY
    """Every pattern, in planning order."""

    @classmethod
    def of(cls, policy: Policy) -> Rules:
        known = ", ".join(sorted(BY_NAME))
        problems = [
            ConfigProblem(policy.source, f"patterns.{name}", f"no such pattern (known: {known})")
            for name in sorted(set(policy.patterns) - BY_NAME.keys())
        ]
        options: dict[str, Ladder] = {}
        for detector in REGISTRY:
            configured, found = detector.configure(policy.patterns.get(detector.name, {}), policy.source)
            problems.extend(found)
            if configured is not None:
                options[detector.name] = configured
        if problems:
            raise ConfigError(problems)
        return cls(policy, Classifier(policy.classify), options)

    @property
    def episodic(self) -> frozenset[str]:
        return frozenset(p.name for p in self.patterns if p.episodic)

    def acts(self, pattern: Pattern) -> bool:
        """`pattern` acts under this policy (not in shadow)."""
        return self.options[pattern.name].mode is Mode.ACT

    @property
    def next_step_acts(self) -> bool:
        """A pattern that names the failure's next step acts (`Detector.names_next_step`): the gates
        may ask for that step; in shadow, its words stay out of them."""
        return any(p.names_next_step and self.acts(p) for p in self.patterns)
