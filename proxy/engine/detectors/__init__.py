"""The patterns: one file each, every one a `Detector` (see `base`), in planning order.

Adding a pattern is one new file exporting `DETECTOR`, one line below, and its pair of
scenarios (must trip, must not) in tests/scenarios/.
"""

from __future__ import annotations

import copyreg
from collections.abc import Mapping

from proxy.engine.detectors import (
    excessive_polling,
    format_error_loop,
    monologue,
    no_effect,
    ping_pong,
    pointless_call,
    read_stagnation,
    redone_edit,
    refused_edits,
    repeat_call,
    repeat_failed_call,
    repeat_output,
    repeated_error,
    retread,
    reverify_owed,
    stuck_same_diagnostic,
    unmatched_edit,
)
from proxy.engine.detectors.base import (
    Detector,
    DetectorStates,
    Forced,
    Levers,
    Pattern,
    Refusal,
    Trip,
    TurnFacts,
)

__all__ = [
    "BY_NAME",
    "REGISTRY",
    "Detector",
    "DetectorStates",
    "Forced",
    "Levers",
    "Pattern",
    "Refusal",
    "Trip",
    "TurnFacts",
    "pattern_of",
    "registered",
]

REGISTRY: tuple[Pattern, ...] = (
    stuck_same_diagnostic.DETECTOR,
    reverify_owed.DETECTOR,
    repeated_error.DETECTOR,
    repeat_call.DETECTOR,
    repeat_failed_call.DETECTOR,
    refused_edits.DETECTOR,
    repeat_output.DETECTOR,
    no_effect.DETECTOR,
    pointless_call.DETECTOR,
    redone_edit.DETECTOR,
    unmatched_edit.DETECTOR,
    read_stagnation.DETECTOR,
    ping_pong.DETECTOR,
    retread.DETECTOR,
    format_error_loop.DETECTOR,
    monologue.DETECTOR,
    excessive_polling.DETECTOR,
)
"""Every pattern, in the order their trips are planned."""
BY_NAME: Mapping[str, Pattern] = {d.name: d for d in REGISTRY}


def registered(name: str) -> Pattern:
    """The registered pattern of this name (how a pickled trip's pattern is read back)."""
    return BY_NAME[name]


PICKLE_CODE = 240
"""`registered` in pickle's extension registry (`copyreg`: 240-255 are for private use): a state
with trips pickles it as two bytes, not the 40 of its module and name (`Detector.__reduce__`)."""
copyreg.add_extension(__name__, registered.__name__, PICKLE_CODE)


def pattern_of(trip: Trip) -> Pattern:
    """The pattern that made `trip`, with what the plan asks of it (its remedy, `force`,
    `restrict`): the state keeps it as a `Folding`, a type that cannot name those."""
    pattern = trip.pattern
    if not isinstance(pattern, Detector):
        raise TypeError(f"{pattern.name}: a trip's pattern is not a detector")
    return pattern
