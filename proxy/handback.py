"""The incomplete hand-back: an ordinary assistant reply the proxy writes itself.

It says the run is incomplete, why, and what is still failing; the `current_failure`
block travels in the `X-Repair-Current-Failure` header as JSON. Streamed when the request
streamed, in chat-completions chunks ending with `data: [DONE]`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass

import orjson

__all__ = ["CURRENT_FAILURE_HEADER", "OUTCOME_HEADER", "Handback", "chat_completion", "chat_completion_stream"]

CURRENT_FAILURE_HEADER = "X-Repair-Current-Failure"
OUTCOME_HEADER = "X-Repair-Outcome"


@dataclass(frozen=True, slots=True)
class Handback:
    text: str
    reason: str
    current_failure: Mapping[str, object] | None
    conversation: str
    turn: int

    def headers(self) -> dict[str, str]:
        # Header values must be ASCII: json.dumps escapes everything else.
        return {
            OUTCOME_HEADER: "incomplete",
            CURRENT_FAILURE_HEADER: json.dumps(self.current_failure, ensure_ascii=True, separators=(",", ":")),
        }

    @property
    def completion_id(self) -> str:
        return f"chatcmpl-repair-{self.conversation[:16]}-{self.turn}"


def chat_completion(handback: Handback, model: str) -> bytes:
    return orjson.dumps(
        {
            "id": handback.completion_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": handback.text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            "repair": {"outcome": "incomplete", "reason": handback.reason, "current_failure": handback.current_failure},
        }
    )


def chat_completion_stream(handback: Handback, model: str) -> bytes:
    created = int(time.time())

    def chunk(delta: Mapping[str, object], finish: str | None) -> bytes:
        body = {
            "id": handback.completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return b"data: " + orjson.dumps(body) + b"\n\n"

    return (
        chunk({"role": "assistant", "content": ""}, None)
        + chunk({"content": handback.text}, None)
        + chunk({}, "stop")
        + b"data: [DONE]\n\n"
    )
