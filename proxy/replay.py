"""Replay: run chat requests of one conversation through the engine, offline.

FILE is one request body (JSON) or JSON Lines of successive request bodies. For each
request: the folded state, the trips that fired on it, and the instructions placed in it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from proxy.engine import Analysis, Engine

__all__ = ["ReplayInputError", "read_requests", "render_text", "replay", "to_record"]


class ReplayInputError(ValueError):
    """The replay file is not a JSON request nor JSON Lines of requests."""


def read_requests(path: Path) -> list[bytes]:
    """Each request body of the file, as bytes (one JSON document, or one per line)."""
    raw = path.read_bytes()
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    else:
        return [raw]
    bodies: list[bytes] = []
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ReplayInputError(f"{path}:{number}: not JSON ({exc})") from None
        bodies.append(line)
    return bodies


def to_record(index: int, analysis: Analysis | None) -> dict[str, Any]:
    if analysis is None:
        return {"request": index, "state": None, "trips": [], "injected": []}
    injected: list[dict[str, Any]] = [
        {"pattern": i.pattern, "placement": i.placement.value, "turn": i.turn, "text": i.text}
        for i in analysis.injected
    ]
    if analysis.halt is not None:
        injected.append(
            {
                "pattern": analysis.halt.reason,
                "placement": "handback",
                "turn": analysis.halt.turn,
                "text": analysis.halt.text,
            }
        )
    return {
        "request": index,
        "state": analysis.state.repair.as_dict(),
        "trips": [
            {"pattern": t.pattern, "action": t.action.value, "turn": t.turn, "count": t.count, "detail": t.detail}
            for t in analysis.new_trips
        ],
        "injected": injected,
    }


def replay(engine: Engine, bodies: list[bytes]) -> Iterator[dict[str, Any]]:
    for index, body in enumerate(bodies):
        yield to_record(index, engine.analyse(body, {}))


def render_text(record: dict[str, Any]) -> str:
    """One request of the timeline, for a person."""
    lines = [f"request {record['request']}"]
    state = record["state"]
    if state is None:
        return lines[0] + ": not a chat transcript (forwarded untouched)"
    signature = state["last_diagnostic_signature"]
    lines.append(
        f"  state: class={state['last_diagnostic_class']} signature={signature[:12] if signature else None} "
        f"streak={state['same_diagnostic_streak']} write_epoch={state['write_epoch']} "
        f"edit_since_failure={state['edit_since_failure']} reverify_owed={state['reverify_owed']}"
    )
    for trip in record["trips"]:
        lines.append(f"  TRIP {trip['pattern']} -> {trip['action']} (turn {trip['turn']}): {trip['detail']}")
    for item in record["injected"]:
        text = "\n      ".join(item["text"].splitlines())
        lines.append(f"  {item['placement']} after turn {item['turn']} [{item['pattern']}]:\n      {text}")
    return "\n".join(lines)
