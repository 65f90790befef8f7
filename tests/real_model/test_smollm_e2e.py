"""A real model server on both sides of the proxy: the openai SDK, openai-agents, and a stuck run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest
from aiohttp.test_utils import TestServer
from support import policy_toml

pytestmark = pytest.mark.real_model

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


EXAMPLES = [("Paris", "18C and sunny"), ("Rome", "24C and clear"), ("Tokyo", "15C and rain"), ("Cairo", "31C and dry")]
SYSTEM = "You are a helpful assistant. Use the tools to answer."


def few_shot_items(city: str) -> list[Any]:
    """The examples as Responses input items, the form openai-agents takes as input."""
    items: list[Any] = []
    for i, (seen, answer) in enumerate(EXAMPLES):
        arguments = json.dumps({"city": seen})
        items += [
            {"type": "message", "role": "user", "content": f"What is the weather in {seen}?"},
            {"type": "function_call", "call_id": f"ex{i}", "name": "get_weather", "arguments": arguments},
            {"type": "function_call_output", "call_id": f"ex{i}", "output": answer},
            {"type": "message", "role": "assistant", "content": f"It is {answer} in {seen}."},
        ]
    return [*items, {"type": "message", "role": "user", "content": f"What is the weather in {city}?"}]


def few_shot(city: str) -> list[dict[str, Any]]:
    """A few example tool turns first: a 135M model calls tools reliably when it has seen some."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for i, (seen, answer) in enumerate(EXAMPLES):
        call = {
            "id": f"ex{i}",
            "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps({"city": seen})},
        }
        messages += [
            {"role": "user", "content": f"What is the weather in {seen}?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"ex{i}", "content": answer},
            {"role": "assistant", "content": f"It is {answer} in {seen}."},
        ]
    messages.append({"role": "user", "content": f"What is the weather in {city}?"})
    return messages


@pytest.fixture
async def proxied(make_proxy, llama_smollm: str) -> TestServer:
    return await make_proxy(upstream_url=llama_smollm)


def sdk(proxy: TestServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=str(proxy.make_url("/v1")), api_key="none", max_retries=0, timeout=120)


async def test_sdk_tool_call_through_the_proxy(proxied: TestServer) -> None:
    """Non-streaming: the real model's tool call comes back through the proxy, parsed by the SDK."""
    result = await sdk(proxied).chat.completions.create(
        model="smollm", messages=few_shot("Oslo"), tools=[WEATHER], temperature=0, max_tokens=64
    )  # type: ignore[arg-type]
    calls = result.choices[0].message.tool_calls
    assert calls, result.choices[0].message
    assert calls[0].function.name == "get_weather"


async def test_sdk_streaming_through_the_proxy(proxied: TestServer) -> None:
    """Streaming: chunks arrive through the proxy and assemble into the real model's tool call."""
    stream = await sdk(proxied).chat.completions.create(
        model="smollm", messages=few_shot("Lima"), tools=[WEATHER], temperature=0, max_tokens=64, stream=True
    )  # type: ignore[arg-type]
    names, text, chunks = [], "", 0
    async for chunk in stream:
        chunks += 1
        for choice in chunk.choices:
            text += choice.delta.content or ""
            names += [c.function.name for c in choice.delta.tool_calls or [] if c.function and c.function.name]
    assert chunks > 1
    assert names == ["get_weather"], text


@pytest.mark.parametrize("mode", ["chat_completions", "responses"])
async def test_openai_agents_runs_a_tool_to_a_final_answer(proxied: TestServer, mode: str) -> None:
    """openai-agents (tracing off), in chat-completions mode and in Responses mode (llama.cpp serves
    /v1/responses), calls the tool through the proxy and answers with its result."""
    from agents import (
        Agent,
        ModelSettings,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )

    set_tracing_disabled(True)
    calls: list[str] = []

    @function_tool(strict_mode=False)  # a plain schema, as the few-shot examples show it
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        calls.append(city)
        return f"It is 20C and windy in {city}."

    model_class = OpenAIChatCompletionsModel if mode == "chat_completions" else OpenAIResponsesModel
    model = model_class(model="smollm", openai_client=sdk(proxied))
    agent = Agent(
        name="weather",
        instructions=SYSTEM,
        tools=[get_weather],
        model=model,
        model_settings=ModelSettings(temperature=0),
    )
    result = await Runner.run(agent, few_shot_items("Oslo"), max_turns=4)  # type: ignore[arg-type]
    assert calls == ["Oslo"]
    assert isinstance(result.final_output, str) and "Oslo" in result.final_output


async def test_stuck_run_is_nudged_and_handed_back_by_the_real_server(
    make_proxy, llama_smollm: str, tmp_path: Path
) -> None:
    """A tool that keeps failing the same way: the nudge reaches the model, its replies come back intact, the hand-back ends the run."""
    policy = tmp_path / "p.toml"
    policy.write_text(
        policy_toml(
            {
                "patterns.stuck_same_diagnostic": {
                    "after": 2,
                    "action": "nudge",
                    "escalate": [{"at": 3, "action": "halt"}],
                }
            }
        )
    )
    proxy = await make_proxy(policy=str(policy), upstream_url=llama_smollm)
    failure = (Path(__file__).resolve().parents[1] / "scenarios" / "outputs" / "pytest_addition_a.txt").read_text()
    run_tests = {
        "type": "function",
        "function": {
            "name": "run_tests",
            "description": "Run the test suite.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You fix bugs. Call run_tests to check your work."},
        {"role": "user", "content": "Make the tests pass."},
    ]
    outcomes, nudged = [], False
    async with aiohttp.ClientSession() as client:
        for turn in range(6):
            body = {"model": "smollm", "messages": messages, "tools": [run_tests], "temperature": 0, "max_tokens": 48}
            async with client.post(str(proxy.make_url("/v1/chat/completions")), json=body) as response:
                headers, reply = response.headers, await response.json()
            assert response.status == 200, reply
            nudged = nudged or headers.get("X-Repair-Trips") == "stuck_same_diagnostic"
            if headers.get("X-Repair-Outcome") == "incomplete":
                outcomes.append("handback")
                assert "INCOMPLETE" in reply["choices"][0]["message"]["content"]
                break
            message = reply["choices"][0]["message"]
            assert message["role"] == "assistant"
            outcomes.append("reply")
            # whatever the model said, the agent runs the tests, and they fail the same way
            call_id = f"run{turn}"
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": call_id, "type": "function", "function": {"name": "run_tests", "arguments": "{}"}}
                    ],
                }
            )
            messages.append({"role": "tool", "tool_call_id": call_id, "content": failure})
    assert nudged
    assert outcomes == ["reply", "reply", "reply", "handback"]
