"""litellm as a client library (`litellm.completion` to an OpenAI-compatible base URL)."""

from __future__ import annotations

import json
import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no fetch of its price list from the network
import litellm
from common import BASH, MAX_TURNS, TASK, args, bash, report

base, mode = args()
options = {"model": "openai/m", "api_base": f"{base}/v1", "api_key": "sk-matrix", "num_retries": 0}
if mode == "plain":
    said = [litellm.completion(messages=[{"role": "user", "content": "hi"}], **options).choices[0].message.content]
    stream = litellm.completion(messages=[{"role": "user", "content": "hi"}], stream=True, **options)
    said.append("".join(c.choices[0].delta.content or "" for c in stream if c.choices))
    report(" | ".join(str(s) for s in said))
else:
    messages = [{"role": "user", "content": TASK}]
    shown = ""
    for _ in range(MAX_TURNS):
        message = litellm.completion(messages=messages, tools=[BASH], **options).choices[0].message
        if not message.tool_calls:
            shown = message.content or ""
            break
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
                "tool_calls": [c.model_dump() for c in message.tool_calls],
            }
        )
        for call in message.tool_calls:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": bash(json.loads(call.function.arguments)["command"]),
                }
            )
    report(shown)
