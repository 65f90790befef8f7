"""A verdict: why an attempt at a task stalled, kept for the next attempt at the same task.

The structured reason (what failed, its signature and snippet, how many edits did not
change it, which patterns tripped), never a diff or file contents. Stores keep it by team
and task; the engine writes it and reads it back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import orjson

__all__ = ["Verdict"]


@dataclass(frozen=True, slots=True)
class Verdict:
    team: str
    task: str
    conversation: str
    """The run that wrote it (a run never gets its own verdict back as a prior attempt)."""
    failing_class: str
    signature: str
    snippet: str
    streak: int
    edits_unchanged: int
    patterns: tuple[str, ...]
    written_at: float

    def to_json(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def from_json(cls, raw: bytes | str) -> Verdict:
        data = orjson.loads(raw)
        data["patterns"] = tuple(data.get("patterns", ()))
        return cls(**data)
