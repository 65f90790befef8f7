"""An OpenAI-compatible upstream that answers at once: a fixed completion, or a fixed stream.

Run: python bench/fast_upstream.py PORT
"""

from __future__ import annotations

import sys

import orjson
from aiohttp import web

COMPLETION = orjson.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "bench",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_x",
                            "type": "function",
                            "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 9000, "completion_tokens": 12, "total_tokens": 9012},
    }
)
CHUNK = b'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench","choices":[{"index":0,"delta":{"content":"token "},"finish_reason":null}]}\n\n'
CALL = b'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"execute_bash","arguments":"{\\"command\\": \\"ls\\"}"}}]},"finish_reason":null}]}\n\n'
STREAM_CHUNKS = 32
"""A streamed reply: some reasoning text, then a tool call, as an agent's model answers."""


async def chat(request: web.Request) -> web.StreamResponse:
    body = await request.read()
    if b'"stream":true' not in body.replace(b" ", b""):
        return web.Response(body=COMPLETION, content_type="application/json")
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for _ in range(STREAM_CHUNKS):
        await response.write(CHUNK)
    await response.write(CALL)
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


def main() -> None:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", lambda _r: web.json_response({"object": "list", "data": []}))  # type: ignore[arg-type,return-value]
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)


if __name__ == "__main__":
    main()
