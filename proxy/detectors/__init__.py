"""The detector registry: one module per pattern, each a pure `fold`, found by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from proxy.detectors import (
    excessive_polling,
    monologue,
    ping_pong,
    read_stagnation,
    repeat_call,
    repeat_output,
    repeated_error,
    reverify_owed,
    stuck_same_diagnostic,
)
from proxy.detectors.types import Trip, TurnFacts
from proxy.policy import Policy

__all__ = ["REGISTRY", "Detector", "Trip", "TurnFacts"]


@dataclass(frozen=True, slots=True)
class Detector:
    name: str
    initial: Any
    fold: Callable[[Any, TurnFacts, Policy], tuple[Any, list[Trip]]]
    episodic: bool
    """A person's new user message starts a new episode: the state goes back to `initial`."""


REGISTRY: Mapping[str, Detector] = {
    module.NAME: Detector(module.NAME, module.INITIAL, module.fold, module.EPISODIC)
    for module in (
        stuck_same_diagnostic,
        reverify_owed,
        repeated_error,
        repeat_call,
        repeat_output,
        read_stagnation,
        ping_pong,
        monologue,
        excessive_polling,
    )
}
"""Every pattern by name, in the order their trips are planned."""
