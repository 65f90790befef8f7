"""Two proxy processes sharing a real redis-server, behind a round-robin balancer: a conversation
split across them is treated as by one, and a verdict written by one reaches a run on the other."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from chat import Chat, stuck_requests, test_run
from support import Upstream, completion, json_reply, post, spawn_proxy, wait_healthy

from proxy.http.upstream.forward import HOP_BY_HOP
from proxy.store import open_store

ACTING = completion(
    "", tool_calls=[{"id": "c", "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}]
)


@dataclass
class RoundRobin:
    """A balancer on 127.0.0.1: each request goes to the next backend in turn, whole."""

    backends: list[str]
    served: list[int] = field(default_factory=list)
    server: TestServer | None = None

    @property
    def base(self) -> str:
        assert self.server is not None
        return str(self.server.make_url("")).rstrip("/")

    async def handle(self, request: web.Request) -> web.Response:
        index = len(self.served) % len(self.backends)
        self.served.append(index)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP and k.lower() != "host"}
        async with (
            aiohttp.ClientSession(auto_decompress=False) as client,
            client.request(
                request.method, self.backends[index] + request.path_qs, data=await request.read(), headers=headers
            ) as response,
        ):
            body = await response.read()
            kept = {k: v for k, v in response.headers.items() if k.lower() not in HOP_BY_HOP | {"content-length"}}
            return web.Response(status=response.status, body=body, headers=kept)


@pytest.fixture
async def replicas(upstream: Upstream, redis_url: str) -> AsyncIterator[RoundRobin]:
    processes = []
    backends = []
    for _ in range(2):
        process, port = await spawn_proxy(
            "--upstream", upstream.base_url, env={"REPAIR_PROXY_VERDICTS": redis_url}, workers=1
        )
        processes.append(process)
        backends.append(f"http://127.0.0.1:{port}")
    balancer = RoundRobin(backends)
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", balancer.handle)
    balancer.server = TestServer(app, host="127.0.0.1")
    try:
        for backend in backends:
            await wait_healthy(int(backend.rsplit(":", 1)[1]))
        await balancer.server.start_server()
        yield balancer
    finally:
        await balancer.server.close()
        for process in processes:
            process.terminate()
        await asyncio.gather(*(asyncio.wait_for(p.wait(), 30) for p in processes))


async def test_a_conversation_split_across_replicas_gets_the_same_instructions(
    make_proxy, upstream: Upstream, replicas: RoundRobin
) -> None:
    """Round-robin over two replicas: the upstream receives byte for byte what one proxy sends,
    and both replicas took part."""
    upstream.reply_with(json_reply(ACTING))
    steps = stuck_requests("split")
    single = await make_proxy()
    for body in steps:
        await post(single, body)
    alone = [seen.body for seen in upstream.seen]
    upstream.seen.clear()
    for body in steps:
        status, _headers, _body = await post(replicas.base, body)
        assert status == 200
    assert [seen.body for seen in upstream.seen] == alone
    assert set(replicas.served) == {0, 1}
    assert sum(sent != seen for sent, seen in zip(steps, alone, strict=True)) >= 2  # instructions were added


async def test_a_verdict_written_by_one_replica_reaches_a_run_on_the_other(
    upstream: Upstream, replicas: RoundRobin, redis_url: str
) -> None:
    """Run 1 stalls; the replica that saw the stall writes the verdict to Redis; run 2's first
    request, served by the other replica, carries the note."""
    upstream.reply_with(json_reply(ACTING))
    task = f"Fix tests/test_parse.py::test_addition (replicas test {time.time()})."
    run1 = Chat(user=task, id_prefix="replica-run1")
    writer = None
    for out in ("@pytest_addition_a", "@pytest_addition_b", "@pytest_addition_a"):
        _status, headers, _body = await post(replicas.base, run1.turn(test_run(out)).bytes())
        if writer is None and "X-Repair-Trips" in headers:
            writer = replicas.served[-1]
    assert writer is not None, "run 1 should have stalled"
    store = open_store(redis_url)
    assert store is not None
    stored = await store.list("default")
    await store.close()
    assert any("assert 4 == 3" in v.snippet and v.written_at > time.time() - 60 for v in stored)
    if len(replicas.served) % 2 == writer:  # the next request would go to the writer: move on
        async with aiohttp.ClientSession() as client, client.get(replicas.base + "/healthz") as response:
            assert response.status == 200
    first = len(upstream.seen)
    await post(replicas.base, Chat(user=task, id_prefix="replica-run2").bytes())
    assert replicas.served[-1] != writer
    note = upstream.seen[first].json()["messages"]
    assert "A previous attempt at this task stalled" in note[2]["content"]
    assert "assert 4 == 3" in note[2]["content"]
