"""The `ollama` Python client, on Ollama's native /api/chat (NDJSON streaming, no call ids)."""

from __future__ import annotations

import ollama
from common import BASH, MAX_TURNS, TASK, args, bash, report

base, mode = args()
client = ollama.Client(host=base, headers={"Authorization": "Bearer sk-matrix"})
if mode == "plain":
    said = [client.chat(model="m", messages=[{"role": "user", "content": "hi"}], stream=False).message.content]
    said.append(
        "".join(
            p.message.content or ""
            for p in client.chat(model="m", messages=[{"role": "user", "content": "hi"}], stream=True)
        )
    )
    report(" | ".join(str(s) for s in said))
else:
    messages: list = [{"role": "user", "content": TASK}]
    shown = ""
    for _ in range(MAX_TURNS):
        message = client.chat(model="m", messages=messages, tools=[BASH], stream=False).message
        if not message.tool_calls:
            shown = message.content or ""
            break
        messages.append(message)
        for call in message.tool_calls:
            messages.append(
                {"role": "tool", "content": bash(call.function.arguments["command"]), "tool_name": call.function.name}
            )
    report(shown)
