"""The real `openai` SDK pointed at the proxy, as an agent would be."""

from __future__ import annotations

from collections.abc import AsyncIterator

import openai
import pytest
from aiohttp.test_utils import TestServer
from support import Upstream, completion, json_reply, sdk, sse_chunks, sse_reply

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    }
]
MESSAGES = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "List the files."}]


@pytest.fixture
async def client(proxy: TestServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with sdk(proxy) as opened:
        yield opened


async def test_sdk_non_streaming_call_with_tools(client: openai.AsyncOpenAI, upstream: Upstream) -> None:
    """chat.completions.create with tools returns the upstream's tool call, parsed by the SDK."""
    call = {"id": "call_ls", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    upstream.reply_with(json_reply(completion("", tool_calls=[call])))
    result = await client.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS)  # type: ignore[arg-type]
    tool_calls = result.choices[0].message.tool_calls
    assert tool_calls is not None
    assert tool_calls[0].function.arguments == '{"command": "ls"}'
    assert upstream.seen[0].json()["tools"] == TOOLS
    assert upstream.seen[0].headers["Authorization"] == "Bearer sk-agent"


async def test_sdk_streaming_call_with_tools(client: openai.AsyncOpenAI, upstream: Upstream) -> None:
    """A streamed tool call arrives through the proxy as the SDK's chunks, usage chunk included."""
    tool_call = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"command":"pwd"}'}}
    upstream.reply_with(sse_reply(sse_chunks(tool_call=tool_call)))
    stream = await client.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS, stream=True)  # type: ignore[arg-type]
    names, arguments, usage = [], "", None
    async for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            for delta in choice.delta.tool_calls or []:
                if delta.function and delta.function.name:
                    names.append(delta.function.name)
                arguments += (delta.function.arguments or "") if delta.function else ""
    assert names == ["bash"]
    assert arguments == '{"command":"pwd"}'
    assert usage is not None and usage.total_tokens == 3


async def test_sdk_sees_upstream_errors_as_its_own_exception_types(
    client: openai.AsyncOpenAI, upstream: Upstream
) -> None:
    """An upstream 404 surfaces as openai.NotFoundError carrying the upstream's message."""
    upstream.reply_with(
        json_reply(
            b'{"error":{"message":"model m not found","type":"invalid_request_error","code":"model_not_found"}}',
            status=404,
        )
    )
    with pytest.raises(openai.NotFoundError) as caught:
        await client.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
    assert caught.value.code == "model_not_found"


async def test_sdk_sees_proxy_errors_in_openai_shape(make_proxy) -> None:
    """The proxy's own 502 is an OpenAI-shaped error the SDK turns into InternalServerError."""
    proxy = await make_proxy(upstream_url="http://127.0.0.1:9/v1")
    async with sdk(proxy) as opened:
        with pytest.raises(openai.InternalServerError) as caught:
            await opened.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
    assert caught.value.status_code == 502
    assert caught.value.code == "upstream_unreachable"
