"""The detector registry: one module per pattern, each a pure `fold`, found by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from proxy.detectors import repeated_error, reverify_owed, stuck_same_diagnostic
from proxy.detectors.types import Trip, TurnFacts
from proxy.policy import Policy

__all__ = ["REGISTRY", "Detector", "Trip", "TurnFacts"]


@dataclass(frozen=True, slots=True)
class Detector:
    name: str
    initial: Any
    fold: Callable[[Any, TurnFacts, Policy], tuple[Any, list[Trip]]]


REGISTRY: Mapping[str, Detector] = {
    module.NAME: Detector(module.NAME, module.INITIAL, module.fold)
    for module in (stuck_same_diagnostic, reverify_owed, repeated_error)
}
"""Every pattern by name, in the order their trips are planned."""
