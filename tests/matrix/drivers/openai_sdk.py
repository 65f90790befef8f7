"""The `openai` SDK: chat completions and the Responses API, whole and streamed."""

from __future__ import annotations

import json

import openai
from common import BASH, MAX_TURNS, TASK, args, bash, report

base, mode = args()
client = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-matrix", max_retries=0)
if mode == "plain":
    said = [
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        .choices[0]
        .message.content
    ]
    stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True)
    said.append("".join(c.choices[0].delta.content or "" for c in stream if c.choices))
    said.append(client.responses.create(model="m", input="hi").output_text)
    said.append(
        "".join(
            e.delta
            for e in client.responses.create(model="m", input="hi", stream=True)
            if e.type == "response.output_text.delta"
        )
    )
    report(" | ".join(str(s) for s in said))
else:
    messages = [{"role": "user", "content": TASK}]
    shown = ""
    for _ in range(MAX_TURNS):
        reply = client.chat.completions.create(model="m", messages=messages, tools=[BASH], stream=False)
        message = reply.choices[0].message
        if not message.tool_calls:
            shown = message.content or ""
            break
        messages.append(message.model_dump(exclude_none=True, include={"role", "content", "tool_calls"}))
        for call in message.tool_calls:
            output = bash(json.loads(call.function.arguments)["command"])
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    report(shown)
