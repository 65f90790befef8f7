"""langchain-openai's ChatOpenAI, with a tool bound, whole and streamed."""

from __future__ import annotations

from common import BASH, MAX_TURNS, TASK, args, bash, report
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI

base, mode = args()
model = ChatOpenAI(model="m", base_url=f"{base}/v1", api_key="sk-matrix", max_retries=0)
if mode == "plain":
    said = [model.invoke("hi").content, "".join(str(c.content) for c in model.stream("hi"))]
    report(" | ".join(str(s) for s in said))
else:
    bound = model.bind_tools([BASH])
    messages: list = [HumanMessage(TASK)]
    shown = ""
    for _ in range(MAX_TURNS):
        reply = bound.invoke(messages)
        if not reply.tool_calls:
            shown = str(reply.content)
            break
        messages.append(reply)
        for call in reply.tool_calls:
            messages.append(ToolMessage(bash(call["args"]["command"]), tool_call_id=call["id"]))
    report(shown)
