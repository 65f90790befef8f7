"""smolagents' ToolCallingAgent with an OpenAI-compatible model and a shell tool. Its history
goes back to the model as tool calls; the run's final answer is what its user sees."""

from __future__ import annotations

from common import TASK, args, bash, report
from smolagents import OpenAIServerModel, ToolCallingAgent, tool

base, mode = args()
model = OpenAIServerModel(model_id="m", api_base=f"{base}/v1", api_key="sk-matrix", client_kwargs={"max_retries": 0})


@tool
def shell(command: str) -> str:
    """Run a bash command in the repository and return its output.

    Args:
        command: the command to run.
    """
    return bash(command)


if mode == "plain":
    reply = model.generate([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    report(str(reply.content))
else:
    agent = ToolCallingAgent(tools=[shell], model=model, max_steps=8, verbosity_level=0)
    report(str(agent.run(TASK)))
