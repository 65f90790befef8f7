"""The proxy core against a real upstream on loopback: forwarding, streaming, errors, transparency."""

from __future__ import annotations

import asyncio
import gzip
import socket

import aiohttp
import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from support import Endless, Upstream, completion, gzip_reply, json_reply, post, sse_chunks, sse_reply

from proxy.http.runtime.appkeys import RUNTIME

CHAT_WITH_TOOLS = (
    b'{"model": "qwen2.5-coder",  "messages": [{"role":"system","content":"You fix bugs."},'
    b'{"role":"user","content":"Fix the failing test \\u00e9"},'
    b'{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",'
    b'"function":{"name":"bash","arguments":"{\\"command\\": \\"ls\\"}"}}]},'
    b'{"role":"tool","tool_call_id":"call_1","content":"README.md\\nsrc"}],'
    b'"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object",'
    b'"properties":{"command":{"type":"string"}}}}}],   "temperature": 0.2}'
)


def url(server: TestServer, path: str) -> str:
    return str(server.make_url(path))


@pytest.mark.parametrize("repair", [False, True], ids=["repair_off", "repair_on_nothing_to_inject"])
async def test_non_streaming_chat_is_byte_identical_both_ways(make_proxy, upstream: Upstream, repair: bool) -> None:
    """Without anything to inject the upstream gets the agent's bytes and the agent gets the upstream's."""
    reply = completion(
        "done", tool_calls=[{"id": "c9", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]
    )
    upstream.reply_with(json_reply(reply + b"  \n"))
    proxy = await make_proxy({"repair": {"enabled": repair}})
    status, _headers, body = await post(proxy, CHAT_WITH_TOOLS)
    assert status == 200
    assert upstream.seen[0].body == CHAT_WITH_TOOLS
    assert body == reply + b"  \n"
    assert upstream.seen[0].path == "/v1/chat/completions"


@pytest.mark.parametrize("repair", [False, True], ids=["repair_off", "repair_on"])
async def test_streaming_chat_is_byte_identical(make_proxy, upstream: Upstream, repair: bool) -> None:
    """SSE comments, usage-only chunks and [DONE] reach the agent exactly as sent."""
    chunks = sse_chunks("a b c", None)
    upstream.reply_with(sse_reply(chunks))
    proxy = await make_proxy({"repair": {"enabled": repair}})
    body = CHAT_WITH_TOOLS.replace(b'"temperature"', b'"stream": true, "temperature"')
    status, headers, received = await post(proxy, body)
    assert status == 200
    assert received == b"".join(chunks)
    assert upstream.seen[0].body == body
    assert headers["Content-Type"].startswith("text/event-stream")
    assert headers["X-Accel-Buffering"] == "no"


async def test_stream_chunks_arrive_before_the_upstream_finishes(plain_proxy: TestServer, upstream: Upstream) -> None:
    """Each chunk is relayed as it arrives: the upstream waits for the agent to see chunk 1 before sending chunk 2."""
    seen_first = asyncio.Event()

    async def before_each(index: int) -> None:
        if index == 2:
            await asyncio.wait_for(seen_first.wait(), 5)

    chunks = sse_chunks("one two", None)
    upstream.reply_with(sse_reply(chunks, before_each=before_each))
    received = b""
    async with (
        aiohttp.ClientSession() as client,
        client.post(url(plain_proxy, "/v1/chat/completions"), data=b'{"stream":true}') as resp,
    ):
        async for chunk in resp.content.iter_any():
            received += chunk
            if b"role" in received:
                seen_first.set()
    assert received == b"".join(chunks)


async def test_gzip_response_is_relayed_compressed_and_consistent(plain_proxy: TestServer, upstream: Upstream) -> None:
    """A compressed body is not decompressed: bytes, Content-Encoding and Content-Length stay true."""
    reply = completion("zipped")
    upstream.reply_with(gzip_reply(reply))
    _status, headers, body = await post(plain_proxy, b"{}", **{"Accept-Encoding": "gzip"})
    assert headers["Content-Encoding"] == "gzip"
    assert int(headers["Content-Length"]) == len(body)
    assert gzip.decompress(body) == reply


async def test_other_paths_methods_and_query_strings_pass_through(plain_proxy: TestServer, upstream: Upstream) -> None:
    """GET /v1/models, embeddings, anything under /v1/ goes to the same path upstream with its query string."""
    upstream.reply_with(json_reply(b'{"object":"list","data":[]}'))
    async with aiohttp.ClientSession() as client:
        async with client.get(url(plain_proxy, "/v1/models?limit=2&x=%20y")) as resp:
            assert resp.status == 200
            assert await resp.read() == b'{"object":"list","data":[]}'
        async with client.delete(url(plain_proxy, "/v1/files/file-1")) as resp:
            assert resp.status == 200
        async with client.post(url(plain_proxy, "/v1/embeddings"), data=b'{"input":"x"}') as resp:
            assert resp.status == 200
    assert [(s.method, s.path, s.query) for s in upstream.seen] == [
        ("GET", "/v1/models", "limit=2&x=%20y"),
        ("DELETE", "/v1/files/file-1", ""),
        ("POST", "/v1/embeddings", ""),
    ]


async def test_hop_by_hop_headers_are_stripped_and_host_is_the_upstreams(
    plain_proxy: TestServer, upstream: Upstream
) -> None:
    """Connection-scoped headers stay on their hop; Authorization and custom headers go through."""
    await post(
        plain_proxy,
        b"{}",
        Authorization="Bearer agent-key",
        Connection="keep-alive, X-Private",
        **{"X-Private": "secret", "Keep-Alive": "timeout=5", "X-Custom": "kept", "Proxy-Authorization": "p"},
    )
    seen = upstream.seen[0].headers
    assert seen["Authorization"] == "Bearer agent-key"
    assert seen["X-Custom"] == "kept"
    for header in ("X-Private", "Keep-Alive", "Proxy-Authorization"):
        assert header not in seen
    assert seen["Host"] == f"127.0.0.1:{upstream.server.port}"


async def test_upstream_api_key_replaces_the_agents(make_proxy, upstream: Upstream) -> None:
    """With upstream.api_key set, the upstream sees that key, not the agent's."""
    proxy = await make_proxy({"upstream": {"api_key": "team-key"}})
    await post(proxy, b"", path="/v1/models", Authorization="Bearer agent-key")
    assert upstream.seen[0].headers["Authorization"] == "Bearer team-key"


@pytest.mark.parametrize("status", [400, 404, 429, 500, 503])
async def test_upstream_errors_reach_the_agent_exactly(
    plain_proxy: TestServer, upstream: Upstream, status: int
) -> None:
    """Upstream 4xx/5xx: status, body and headers arrive as the upstream sent them."""
    error = b'{"error":{"message":"model \\"x\\" not found","type":"not_found"}}'
    upstream.reply_with(json_reply(error, status=status, headers={"Retry-After": "7"}))
    got, headers, body = await post(plain_proxy, CHAT_WITH_TOOLS)
    assert (got, body, headers["Retry-After"]) == (status, error, "7")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_unreachable_upstream_is_502_in_openai_shape(make_proxy) -> None:
    """Nothing listening upstream: 502 with an OpenAI error body naming the cause."""
    proxy = await make_proxy(upstream_url=f"http://127.0.0.1:{closed_port()}/v1")
    status, _headers, body = await post(proxy, CHAT_WITH_TOOLS)
    error = orjson.loads(body)["error"]
    assert status == 502
    assert error["code"] == "upstream_unreachable"
    assert "unreachable" in error["message"]


async def test_slow_first_byte_is_504(make_proxy, upstream: Upstream) -> None:
    """No response headers within first_byte_timeout: 504 naming the timeout."""

    async def slow(_request: web.Request, _body: bytes) -> web.StreamResponse:
        await asyncio.sleep(2)
        return web.Response(body=b"{}")

    upstream.reply_with(slow)
    proxy = await make_proxy({"upstream": {"first_byte_timeout": 0.2}})
    status, _headers, body = await post(proxy, b"{}")
    assert status == 504
    assert orjson.loads(body)["error"]["code"] == "upstream_timeout"


async def test_stream_that_stalls_past_idle_timeout_is_cut(make_proxy, upstream: Upstream) -> None:
    """A gap longer than idle_timeout mid-stream closes the agent's connection (no fake clean end)."""
    chunks = sse_chunks("a b", None)

    async def stall(index: int) -> None:
        if index == 2:
            await asyncio.sleep(2)

    upstream.reply_with(sse_reply(chunks, before_each=stall))
    proxy = await make_proxy({"upstream": {"idle_timeout": 0.3}})
    received = b""
    with pytest.raises(aiohttp.ClientPayloadError):
        async with (
            aiohttp.ClientSession() as client,
            client.post(url(proxy, "/v1/chat/completions"), data=b"{}") as resp,
        ):
            async for chunk in resp.content.iter_any():
                received += chunk
    assert received == b"".join(chunks[:2])


async def test_long_stream_that_keeps_producing_is_never_cut(make_proxy, upstream: Upstream) -> None:
    """Total stream time far beyond idle_timeout is fine while chunks keep coming."""
    chunks = [b'data: {"n": %d}\n\n' % i for i in range(12)] + [b"data: [DONE]\n\n"]
    upstream.reply_with(sse_reply(chunks, gap=0.1))
    proxy = await make_proxy({"upstream": {"idle_timeout": 0.4}})
    status, _headers, body = await post(proxy, b"{}")
    assert status == 200
    assert body == b"".join(chunks)


async def test_body_over_the_limit_is_413(make_proxy, upstream: Upstream) -> None:
    """A body over limits.max_body_bytes is refused in OpenAI's shape and never reaches the upstream."""
    proxy = await make_proxy({"limits": {"max_body_bytes": 1024}})
    status, _headers, body = await post(proxy, b"x" * 5000)
    assert status == 413
    assert orjson.loads(body)["error"]["code"] == "request_too_large"
    assert upstream.seen == []


async def test_huge_body_within_the_limit_goes_through_intact(proxy: TestServer, upstream: Upstream) -> None:
    """An 8 MB transcript is forwarded byte for byte (and analysed on the way)."""
    big = "x" * (8 * 1024 * 1024)
    body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": big}]})
    status, _headers, _body = await post(proxy, body)
    assert status == 200
    assert upstream.seen[0].body == body


async def test_client_disconnect_mid_stream_cancels_the_upstream(plain_proxy: TestServer, upstream: Upstream) -> None:
    """When the agent goes away mid-stream, the upstream's response is torn down: it stops
    generating long before its end, and writes nothing more after that."""
    endless = Endless(lambda i: b'data: {"n": %d}\n\n' % i)
    upstream.reply_with(endless)
    async with aiohttp.ClientSession() as client:
        resp = await client.post(url(plain_proxy, "/v1/chat/completions"), data=b"{}")
        first = await resp.content.readany()
        resp.close()
    assert first.startswith(b'data: {"n": 0}')
    await asyncio.wait_for(endless.stopped.wait(), 5)
    at_stop = len(endless.written)
    assert at_stop < 50, "the upstream kept generating after the agent left"
    await asyncio.sleep(0.3)
    assert len(endless.written) == at_stop, "the upstream wrote again after it was torn down"


async def test_malformed_json_chat_is_forwarded_untouched(proxy: TestServer, upstream: Upstream) -> None:
    """Repair on, body not JSON: the upstream gets it as-is and its own error reaches the agent."""
    upstream.reply_with(json_reply(b'{"error":{"message":"bad json"}}', status=400))
    status, _headers, body = await post(proxy, b'{"messages": [')
    assert status == 400
    assert upstream.seen[0].body == b'{"messages": ['
    assert body == b'{"error":{"message":"bad json"}}'


@pytest.mark.parametrize(
    "odd",
    [
        b'{"messages": "not a list"}',
        b'{"messages": [null, 3, "x", {"role": "wizard"}, {"role": "tool", "content": {"a": 1}}]}',
        b'{"messages": [{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"bash","arguments":"{\\"command\\": \\"ls\\"}{\\"command\\": \\"pwd\\"}"}}]},{"role":"tool","tool_call_id":"a","content":[{"type":"text","text":"x"}]}]}',
        b'{"messages": [{"role":"assistant","function_call":{"name":"bash","arguments":"{}"}},{"role":"function","name":"bash","content":null}]}',
        b"[1, 2, 3]",
    ],
    ids=["messages_not_list", "junk_messages", "merged_parallel_arguments", "legacy_function_call", "array_body"],
)
async def test_odd_message_shapes_are_forwarded_untouched(proxy: TestServer, upstream: Upstream, odd: bytes) -> None:
    """Odd shapes never break a request: analysed as well as possible, forwarded byte for byte."""
    status, _headers, _body = await post(proxy, odd)
    assert status == 200
    assert upstream.seen[0].body == odd


async def test_analysis_exception_fails_open(
    proxy: TestServer, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in analysis forwards the original bytes and the request succeeds."""

    def boom(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("analysis bug")

    monkeypatch.setattr(proxy.app[RUNTIME].current.teams["default"].engine, "fold", boom)
    status, _headers, body = await post(proxy, CHAT_WITH_TOOLS)
    assert status == 200
    assert upstream.seen[0].body == CHAT_WITH_TOOLS
    assert body == completion()


async def test_healthz_and_readyz(make_proxy, upstream: Upstream) -> None:
    """/healthz is always ok; /readyz follows the upstream's reachability."""
    up = await make_proxy()
    down = await make_proxy(upstream_url=f"http://127.0.0.1:{closed_port()}/v1")
    async with aiohttp.ClientSession() as client:
        async with client.get(url(up, "/healthz")) as resp:
            assert resp.status == 200
        async with client.get(url(up, "/readyz")) as resp:
            assert resp.status == 200
        async with client.get(url(down, "/readyz")) as resp:
            assert resp.status == 503
            assert (await resp.json())["status"] == "unready"
