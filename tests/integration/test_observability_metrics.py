"""The Prometheus side of issue 28 through the real proxy (traces off): the model label where
requests are counted, token counters from the upstream's usage, the process's own metrics."""

from __future__ import annotations

import os
from typing import Any

import orjson
from aiohttp.test_utils import TestServer
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from support import Upstream, json_reply, sdk, sse_reply
from test_metrics import scrape, value

from proxy.http.observe.metrics import ModelLabels, WorkerProcesses
from proxy.http.observe.tracing import TRACING

QUESTION = [{"role": "user", "content": "Say hi."}]


def whole(input_tokens: int, output_tokens: int) -> bytes:
    choice = {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
    usage = {"prompt_tokens": input_tokens, "completion_tokens": output_tokens}
    return orjson.dumps({"id": "x", "object": "chat.completion", "model": "up", "choices": [choice], "usage": usage})


def streamed(input_tokens: int, output_tokens: int) -> list[bytes]:
    base: dict[str, Any] = {"id": "x", "object": "chat.completion.chunk", "model": "up"}
    pieces = [
        {**base, "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**base, "choices": [], "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens}},
    ]
    return [b"data: " + orjson.dumps(p) + b"\n\n" for p in pieces] + [b"data: [DONE]\n\n"]


async def test_tokens_and_the_model_label_after_a_whole_and_a_streamed_request(
    proxy: TestServer, upstream: Upstream
) -> None:
    assert TRACING not in proxy.app, "counted with traces off"
    upstream.reply_with(json_reply(whole(11, 7)), sse_reply(streamed(13, 4)))
    async with sdk(proxy) as client:
        await client.chat.completions.create(model="qwen-a", messages=QUESTION)  # type: ignore[arg-type]
        stream = await client.chat.completions.create(
            model="qwen-b",
            messages=QUESTION,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        async for _chunk in stream:
            pass
    samples = await scrape(proxy)
    tokens = "repair_proxy_tokens_total"
    assert value(samples, tokens, kind="input", model="qwen-a", team="default") == 11
    assert value(samples, tokens, kind="output", model="qwen-a", team="default") == 7
    assert value(samples, tokens, kind="input", model="qwen-b", team="default") == 13
    assert value(samples, tokens, kind="output", model="qwen-b", team="default") == 4
    requests = "repair_proxy_requests_total"
    for model in ("qwen-a", "qwen-b"):
        assert value(samples, requests, route="chat", status="200", team="default", model=model) == 1


async def test_a_request_naming_no_model_is_counted_as_none(proxy: TestServer, upstream: Upstream) -> None:
    upstream.reply_with(json_reply(b'{"data": []}'))
    async with sdk(proxy) as client:
        await client.models.list()
    samples = await scrape(proxy)
    assert value(samples, "repair_proxy_requests_total", route="other", status="200", team="default", model="none") == 1


async def test_the_process_metrics_are_exported(proxy: TestServer) -> None:
    samples = await scrape(proxy)
    names = {name for name, _labels in samples}
    assert {"process_resident_memory_bytes", "process_cpu_seconds_total", "python_info"} <= names


def test_the_model_label_is_bounded() -> None:
    label = ModelLabels(cap=2)
    assert [label(m) for m in ("a", "b", "c", "a", None, "", "b", "d")] == [
        "a",
        "b",
        "other",
        "a",
        "none",
        "none",
        "b",
        "other",
    ]
    assert ModelLabels()("x" * 500) == "other"


def test_each_workers_process_metrics_are_labelled_by_worker() -> None:
    registry = CollectorRegistry()
    registry.register(WorkerProcesses(lambda: {0: os.getpid(), 1: os.getpid()}))
    families = {f.name: f for f in text_string_to_metric_families(generate_latest(registry).decode())}
    memory = families["process_resident_memory_bytes"]
    assert sorted(s.labels["worker"] for s in memory.samples) == ["0", "1"]
    assert all(s.value > 0 for s in memory.samples)


def test_no_worker_list_yet_means_no_process_metrics() -> None:
    def unlisted() -> dict[int, int]:
        raise FileNotFoundError("workers")

    registry = CollectorRegistry()
    registry.register(WorkerProcesses(unlisted))
    assert generate_latest(registry) == b""
