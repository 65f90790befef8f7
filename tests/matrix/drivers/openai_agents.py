"""openai-agents: an Agent with a shell tool, run to its final output, in chat-completions mode
and in Responses mode (`python openai_agents.py BASE MODE chat|responses`)."""

from __future__ import annotations

import sys

from agents import Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
from common import TASK, args, bash, report
from openai import AsyncOpenAI

base, mode = args()
wire = sys.argv[3]
set_tracing_disabled(True)
client = AsyncOpenAI(base_url=f"{base}/v1", api_key="sk-matrix", max_retries=0)
model = (OpenAIResponsesModel if wire == "responses" else OpenAIChatCompletionsModel)(model="m", openai_client=client)


@function_tool(strict_mode=False)
def shell(command: str) -> str:
    """Run a bash command in the repository and return its output."""
    return bash(command)


if mode == "plain":
    agent = Agent(name="greeter", instructions="Greet the user.", model=model)
    report(str(Runner.run_sync(agent, "hi").final_output))
else:
    agent = Agent(name="fixer", instructions="You fix failing tests.", tools=[shell], model=model)
    report(str(Runner.run_sync(agent, TASK, max_turns=8).final_output))
