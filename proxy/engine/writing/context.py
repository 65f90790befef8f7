"""What a remedy may quote, handed to every pattern's remedy and block rung and to the writing
helpers that word them (`meant`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from proxy.engine.state.failure import RepairState
from proxy.engine.text.salvage import OfferedTool
from proxy.engine.writing.vocabulary import Vocabulary


@dataclass(frozen=True, slots=True)
class RemedyContext:
    """What a remedy may quote: the failure model as the trip left it, the agent's own tools,
    and `fit`, which keeps (head, quoted evidence, next step) within the token budget by
    shortening the quote, never the instruction."""

    repair: RepairState
    vocabulary: Vocabulary | None
    fit: Callable[[str, str, str], str]
    offered: Mapping[str, OfferedTool] = field(default_factory=dict)
    """The request's tools, with their required arguments."""
