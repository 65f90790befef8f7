"""OpenTelemetry traces through the real proxy: the real `openai` SDK as the agent, a real
upstream on loopback, spans caught by the SDK's in-memory exporter (and, once, by a real OTLP
HTTP receiver on loopback, as a collector would get them)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from chat import Chat, stuck_requests, view
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from support import (
    Upstream,
    fresh_interpreter,
    json_reply,
    post,
    sdk,
    speaking_policy,
    sse_reply,
    start_proxy,
    start_upstream,
)

from proxy.http.observe.otel import EXPORTERS, Otel
from proxy.http.observe.traces_asked import EXPORTER_NAMES
from proxy.http.observe.tracing import TRACING, tracing_from_env
from proxy.http.runtime.tenancy import build_runtime
from proxy.http.serving.app import make_app, server_options
from proxy.settings.config import load_settings
from proxy.settings.problems import ConfigError

BASE = {"id": "chatcmpl-up", "created": 1700000000, "model": "m-2025"}
QUESTION = [{"role": "user", "content": "Say hi."}]


def whole(content: str = "hi", usage: tuple[int, int] = (11, 7), tool_call: bool = False) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_call:
        call = {"id": "c1", "type": "function", "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if tool_call else "stop"}
    counts = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return orjson.dumps({**BASE, "object": "chat.completion", "choices": [choice], "usage": counts})


def streamed(pieces: list[str], usage: tuple[int, int] | None = (13, 4)) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + orjson.dumps({**BASE, "object": "chat.completion.chunk", "choices": [choice]}) + b"\n\n"

    out = [chunk({"role": "assistant", "content": ""}), *(chunk({"content": p}) for p in pieces), chunk({}, "length")]
    if usage is not None:
        counts = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
        out.append(b"data: " + orjson.dumps({**BASE, "choices": [], "usage": counts}) + b"\n\n")
    return [*out, b"data: [DONE]\n\n"]


async def traced_proxy(upstream_url: str) -> tuple[TestServer, InMemorySpanExporter]:
    """The proxy (repair on, default policy), its spans kept in memory as each ends."""
    overrides = {
        "upstream": {"base_url": upstream_url},
        "store": {"verdicts": ""},
        "repair": {"policy": speaking_policy()},
    }
    settings = load_settings(None, overrides=overrides)
    app = make_app(build_runtime(settings), environ={})
    exporter = InMemorySpanExporter()
    app[TRACING] = Otel(SimpleSpanProcessor(exporter))
    server = TestServer(app, host="127.0.0.1")
    options = {k: v for k, v in server_options(settings).items() if k != "handler_cancellation"}
    await server.start_server(**options)
    return server, exporter


@pytest.fixture
async def traced(upstream: Upstream) -> AsyncIterator[tuple[TestServer, InMemorySpanExporter]]:
    server, exporter = await traced_proxy(upstream.base_url)
    yield server, exporter
    await server.close()


def requests_of(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER]


def attempts_of(exporter: InMemorySpanExporter, parent: ReadableSpan) -> list[ReadableSpan]:
    assert parent.context is not None
    return [
        s
        for s in exporter.get_finished_spans()
        if s.kind is SpanKind.CLIENT and s.parent is not None and s.parent.span_id == parent.context.span_id
    ]


async def test_a_whole_reply_is_one_span_with_model_tokens_and_finish_reason(
    traced: tuple[TestServer, InMemorySpanExporter], upstream: Upstream
) -> None:
    proxy, exporter = traced
    upstream.reply_with(json_reply(whole()))
    async with sdk(proxy) as client:
        got = await client.chat.completions.create(model="m", messages=QUESTION)  # type: ignore[arg-type]
    assert got.choices[0].message.content == "hi"
    (span,) = requests_of(exporter)
    assert span.name == "chat m"
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.request.model"] == "m"
    assert attributes["gen_ai.response.model"] == "m-2025"
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (11, 7)
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert attributes["server.address"] == "127.0.0.1"
    assert attributes["server.port"] == upstream.server.port
    assert attributes["repair_proxy.outcome"] == "complete"
    assert attributes["http.response.status_code"] == 200
    (attempt,) = attempts_of(exporter, span)
    assert dict(attempt.attributes or {})["http.response.status_code"] == 200
    assert dict(attempt.attributes or {})["gen_ai.usage.input_tokens"] == 11


async def test_a_stream_is_one_span_with_the_usage_of_its_last_chunk_and_is_not_held(
    traced: tuple[TestServer, InMemorySpanExporter], upstream: Upstream
) -> None:
    """The usage is read as the chunks pass: the agent has the first piece before the upstream
    sends the rest (the upstream waits for it), so nothing is buffered for the span's sake."""
    proxy, exporter = traced
    first_piece_arrived = asyncio.Event()

    async def after_the_first_piece(index: int) -> None:
        if index >= 2:
            await asyncio.wait_for(first_piece_arrived.wait(), 10)

    upstream.reply_with(sse_reply(streamed(["Hel", "lo"]), before_each=after_the_first_piece))
    pieces = []
    async with sdk(proxy) as client:
        stream = await client.chat.completions.create(
            model="m",
            messages=QUESTION,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
                first_piece_arrived.set()
            if chunk.usage is not None:
                assert (chunk.usage.prompt_tokens, chunk.usage.completion_tokens) == (13, 4)
    assert pieces == ["Hel", "lo"]
    (span,) = requests_of(exporter)
    attributes = dict(span.attributes or {})
    assert span.name == "chat m"
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (13, 4)
    assert attributes["gen_ai.response.finish_reasons"] == ("length",)
    assert attributes["gen_ai.response.model"] == "m-2025"


async def test_a_stream_without_usage_has_no_token_attributes(
    traced: tuple[TestServer, InMemorySpanExporter], upstream: Upstream
) -> None:
    proxy, exporter = traced
    upstream.reply_with(sse_reply(streamed(["a"], usage=None)))
    async with sdk(proxy) as client:
        stream = await client.chat.completions.create(model="m", messages=QUESTION, stream=True)  # type: ignore[arg-type]
        async for _chunk in stream:
            pass
    (span,) = requests_of(exporter)
    attributes = dict(span.attributes or {})
    assert "gen_ai.usage.input_tokens" not in attributes
    assert attributes["gen_ai.response.finish_reasons"] == ("length",)


async def test_a_stuck_transcript_gives_trip_and_injection_events(
    traced: tuple[TestServer, InMemorySpanExporter], upstream: Upstream
) -> None:
    proxy, exporter = traced
    upstream.reply_with(json_reply(whole(tool_call=True)))
    for body in stuck_requests():
        await post(proxy, body)
    events = [(span, event) for span in requests_of(exporter) for event in span.events]
    trips = [dict(e.attributes or {}) for _, e in events if e.name == "repair_proxy.trip"]
    injections = [dict(e.attributes or {}) for _, e in events if e.name == "repair_proxy.injection"]
    assert trips, "the stuck transcript tripped"
    assert all(set(t) >= {"repair_proxy.pattern", "repair_proxy.action"} for t in trips)
    nudges = [
        t["repair_proxy.pattern"] for t in trips if t["repair_proxy.action"] == "nudge" and not t["repair_proxy.shadow"]
    ]
    assert nudges
    assert {i["repair_proxy.pattern"] for i in injections} >= set(nudges)
    tripped = [span for span, e in events if e.name == "repair_proxy.trip"]
    assert all(dict(s.attributes or {})["repair_proxy.arm"] == "treated" for s in tripped)


async def test_a_gate_retry_is_a_second_child_span(
    traced: tuple[TestServer, InMemorySpanExporter], upstream: Upstream
) -> None:
    """An empty reply mid-task is asked again (the action gate): two attempts under one request,
    the second marked as the gate's, both replies' tokens counted on the request."""
    proxy, exporter = traced
    upstream.reply_with(json_reply(whole("", usage=(20, 1))), json_reply(whole(usage=(30, 5), tool_call=True)))
    chat = Chat().turn(view())
    got = await post(proxy, chat.bytes())
    assert got.headers["X-Repair-Retries"] == "action:1"
    (span,) = requests_of(exporter)
    first, second = sorted(attempts_of(exporter, span), key=lambda s: s.start_time or 0)
    assert dict(first.attributes or {})["repair_proxy.attempt"] == 1
    assert "repair_proxy.gate" not in dict(first.attributes or {})
    assert dict(second.attributes or {})["repair_proxy.gate"] == "action"
    assert dict(second.attributes or {})["gen_ai.usage.input_tokens"] == 30
    attributes = dict(span.attributes or {})
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (50, 6)
    assert attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert [e.name for e in span.events if e.name == "repair_proxy.gate_retry"] == ["repair_proxy.gate_retry"]


async def test_an_upstream_error_marks_the_span(
    traced: tuple[TestServer, InMemorySpanExporter], upstream: Upstream
) -> None:
    proxy, exporter = traced
    upstream.reply_with(json_reply(b'{"error": {"message": "no"}}', status=503))
    got = await post(proxy, orjson.dumps({"model": "m", "messages": QUESTION}))
    assert got.status == 503
    (span,) = requests_of(exporter)
    assert dict(span.attributes or {})["repair_proxy.outcome"] == "complete"  # relayed as it came
    (attempt,) = attempts_of(exporter, span)
    assert attempt.status.status_code.name == "ERROR"


async def test_other_routes_are_plain_http_spans(
    traced: tuple[TestServer, InMemorySpanExporter], upstream: Upstream
) -> None:
    proxy, exporter = traced
    upstream.reply_with(json_reply(b'{"data": []}'))
    async with sdk(proxy) as client:
        await client.models.list()
    (span,) = requests_of(exporter)
    assert span.name == "GET"
    assert "gen_ai.operation.name" not in dict(span.attributes or {})


async def test_an_agents_traceparent_is_the_parent(
    traced: tuple[TestServer, InMemorySpanExporter], upstream: Upstream
) -> None:
    proxy, exporter = traced
    upstream.reply_with(json_reply(whole()))
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    await post(proxy, orjson.dumps({"model": "m", "messages": QUESTION}), traceparent=parent)
    (span,) = requests_of(exporter)
    assert span.context is not None and span.parent is not None
    assert f"{span.context.trace_id:032x}" == "0af7651916cd43dd8448eb211c80319c"
    assert f"{span.parent.span_id:016x}" == "b7ad6b7169203331"


async def test_spans_reach_a_real_otlp_http_receiver(monkeypatch: pytest.MonkeyPatch) -> None:
    """Configured only by the standard variables: OTLP over HTTP/protobuf, exported when the proxy stops."""
    received: list[tuple[str, bytes]] = []

    async def traces(request: web.Request) -> web.Response:
        received.append((request.headers.get("Content-Type", ""), await request.read()))
        return web.Response(body=b"", content_type="application/x-protobuf")

    receiver_app = web.Application()
    receiver_app.router.add_post("/v1/traces", traces)
    receiver = TestServer(receiver_app, host="127.0.0.1")
    await receiver.start_server()
    upstream = await start_upstream()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", str(receiver.make_url("")).rstrip("/"))
    monkeypatch.setenv("OTEL_SERVICE_NAME", "proxy-under-test")
    try:
        upstream.reply_with(json_reply(whole()))
        proxy = await start_proxy(upstream.base_url)
        assert TRACING in proxy.app
        async with sdk(proxy) as client:
            await client.chat.completions.create(model="m", messages=QUESTION)  # type: ignore[arg-type]
        await proxy.close()  # the batch is exported as the app stops
    finally:
        await upstream.server.close()
        await receiver.close()
    assert received and all(kind == "application/x-protobuf" for kind, _ in received)
    export = ExportTraceServiceRequest()
    for _, body in received:
        export.MergeFromString(body)
    (resource,) = export.resource_spans
    service = {a.key: a.value.string_value for a in resource.resource.attributes}["service.name"]
    assert service == "proxy-under-test"
    spans = [span for scope in resource.scope_spans for span in scope.spans]
    (request_span,) = [s for s in spans if s.name == "chat m"]
    attributes = {a.key: a.value for a in request_span.attributes}
    assert attributes["gen_ai.usage.input_tokens"].int_value == 11
    assert attributes["repair_proxy.outcome"].string_value == "complete"
    assert [s.parent_span_id for s in spans if s.name == "POST"] == [request_span.span_id]


def test_with_the_variables_unset_no_tracer_is_made_and_nothing_is_imported() -> None:
    script = (
        "import sys\n"
        "from proxy.http.serving.app import make_app\n"
        "from proxy.http.runtime.tenancy import build_runtime\n"
        "from proxy.http.observe.tracing import TRACING\n"
        "from proxy.settings.config import load_settings\n"
        "app = make_app(build_runtime(load_settings(None)), environ={'OTEL_SERVICE_NAME': 'x'})\n"
        "assert TRACING not in app\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    assert fresh_interpreter(script).stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("environ", "says"),
    [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT: traces are asked for"),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, "OTEL_TRACES_EXPORTER: traces are asked for"),
    ],
)
@pytest.mark.parametrize("workers", [1, 2])
def test_asked_for_without_the_packages_the_proxy_stops_at_start_with_one_line(
    environ: dict[str, str], says: str, tmp_path: Path, workers: int
) -> None:
    """`repair-proxy serve` with the variables set where OpenTelemetry cannot be imported (a
    package of that name that fails, first on the path): exit 2, one line, nothing listens.
    With workers, the supervisor says it once and starts none (each worker used to say it)."""
    missing = tmp_path / "opentelemetry"
    missing.mkdir()
    (missing / "__init__.py").write_text('raise ImportError("not installed", name="opentelemetry")\n')
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REPAIR_PROXY_"))}
    env = {**clean, **environ, "PYTHONPATH": str(tmp_path), "REPAIR_PROXY_VERDICTS": ""}
    done = subprocess.run(
        [sys.executable, "-m", "proxy", "serve", "--port", "0", "--workers", str(workers)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: environment: ") and says in lines[0]
    assert "pip install 'repair-proxy[otel]'" in lines[0]
    assert "listening" not in done.stdout
    assert "supervising" not in done.stdout  # no worker was started to fail


@pytest.mark.parametrize(
    ("environ", "says"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER: 'zipkin'"),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            "OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc': only http/protobuf",
        ),
    ],
)
def test_what_cannot_be_exported_to_is_refused_at_start(environ: dict[str, str], says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        tracing_from_env(environ)
    assert says in str(refused.value)


def test_the_check_before_workers_start_loads_no_sdk_and_knows_the_exporters() -> None:
    """A supervisor checks the variables once before its workers start (`traces_asked`): it
    finds the SDK's modules without importing them (nor aiohttp: it serves nothing), and
    accepts the exporters the workers make."""
    script = (
        "import sys\n"
        "from proxy.http.observe.traces_asked import traces_asked\n"
        "asked = traces_asked({'OTEL_EXPORTER_OTLP_ENDPOINT': 'http://127.0.0.1:4318'})\n"
        "assert asked is not None and asked.exporter == 'otlp', asked\n"
        "loaded = [m for m in sys.modules if m.startswith(('opentelemetry.sdk.', 'opentelemetry.trace', 'aiohttp'))]\n"
        "print(sorted(loaded))\n"
    )
    assert fresh_interpreter(script).stdout.strip() == "[]"
    assert tuple(EXPORTERS) == EXPORTER_NAMES


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"},
        {"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"},
    ],
)
def test_traces_are_off_unless_asked_for(environ: dict[str, str]) -> None:
    assert tracing_from_env(environ) is None


async def test_observing_that_fails_never_fails_the_request(
    traced: tuple[TestServer, InMemorySpanExporter], upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A usage reader or a span that raises is logged; the agent gets its reply byte for byte."""
    proxy, _exporter = traced

    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("observing bug")

    monkeypatch.setattr("proxy.http.observe.usage.UsageReader.feed", broken)
    monkeypatch.setattr(Otel, "attempt_span", broken)
    chunks = streamed(["a", "b"])
    upstream.reply_with(json_reply(whole()), sse_reply(chunks))
    got = await post(proxy, orjson.dumps({"model": "m", "messages": QUESTION}))
    assert (got.status, got.body) == (200, whole())
    got = await post(proxy, orjson.dumps({"model": "m", "messages": QUESTION, "stream": True}))
    assert (got.status, got.body) == (200, b"".join(chunks))
