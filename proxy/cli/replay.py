"""Replay: run chat requests of one conversation through the engine, offline.

FILE is one request body (JSON) or JSON Lines of successive request bodies. For each
request: the folded state, the trips that fired on it, and the instructions placed in it.
Only the engine and the chat dialect run: nothing here touches the network.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from proxy.dialects import CHAT, plan_offline
from proxy.engine.core import Engine
from proxy.engine.plan.decide import Decision
from proxy.settings.policy import load_policy

__all__ = ["ReplayInputError", "read_requests", "render_text", "replay", "replay_file", "to_record"]


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


def to_record(index: int, decision: Decision | None) -> dict[str, Any]:
    if decision is None:
        return {"request": index, "state": None, "trips": [], "injected": []}
    injected: list[dict[str, Any]] = [
        {"pattern": i.pattern, "placement": i.placement.value, "turn": i.turn, "text": i.text} for i in decision.placed
    ]
    if decision.halt is not None:
        injected.append(
            {
                "pattern": decision.halt.reason,
                "placement": "handback",
                "turn": decision.halt.turn,
                "text": decision.halt.text,
            }
        )
    return {
        "request": index,
        "state": decision.state.repair.as_dict(),
        "trips": [
            {
                "pattern": t.pattern.name,
                "action": t.action.value,
                "shadow": t.shadow,
                "turn": t.turn,
                "count": t.count,
                "detail": t.detail,
            }
            for t in decision.new_trips
        ],
        "injected": injected,
    }


def replay(engine: Engine, bodies: list[bytes]) -> Iterator[dict[str, Any]]:
    for index, body in enumerate(bodies):
        planned = plan_offline(engine, CHAT, body, {})
        yield to_record(index, None if planned is None else planned.decision)


def replay_file(path: Path, policy: str, as_json: bool) -> Iterator[str]:
    """The replay of a file under a policy (empty: the embedded one), one line or block per request."""
    engine = Engine.of(load_policy(policy))
    for record in replay(engine, read_requests(path)):
        yield orjson.dumps(record).decode() if as_json else render_text(record)


_LABELS = {
    "last_diagnostic_class": "class",
    "last_diagnostic_signature": "signature",
    "same_diagnostic_streak": "streak",
}
"""Short labels, shown first; the model's other fields follow under their own names."""


def _shown(state: dict[str, Any]) -> list[tuple[str, Any]]:
    first = [(label, state[key]) for key, label in _LABELS.items()]
    signature = first[1][1]
    first[1] = ("signature", signature[:12] if signature else None)
    return first + [(key, value) for key, value in state.items() if key not in _LABELS]


def render_text(record: dict[str, Any]) -> str:
    """One request of the timeline, for a person."""
    lines = [f"request {record['request']}"]
    state = record["state"]
    if state is None:
        return lines[0] + ": not a chat transcript (forwarded untouched)"
    lines.append("  state: " + " ".join(f"{label}={value}" for label, value in _shown(state)))
    for trip in record["trips"]:
        shadow = " [shadow: said nothing]" if trip.get("shadow") else ""
        lines.append(f"  TRIP {trip['pattern']} -> {trip['action']}{shadow} (turn {trip['turn']}): {trip['detail']}")
    for item in record["injected"]:
        text = "\n      ".join(item["text"].splitlines())
        lines.append(f"  {item['placement']} after turn {item['turn']} [{item['pattern']}]:\n      {text}")
    return "\n".join(lines)
