"""The same properties through the real proxy and a real upstream on loopback: whatever the
agent sends, the proxy never answers with an error of its own making, and the upstream gets
the agent's bytes, or a rewrite that only adds the proxy's instructions."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from strategies import as_ollama, as_responses, chat_body, examples
from support import Upstream, completion, json_reply, start_proxy, start_upstream

from proxy.http.observe.marks import OUTCOME_HEADER

PATHS = {
    "chat": ("/v1/chat/completions", "messages", lambda b: b),
    "responses": ("/v1/responses", "input", as_responses),
    "ollama": ("/api/chat", "messages", as_ollama),
}


@dataclass
class Servers:
    proxy_url: str
    upstream: Upstream


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    """An upstream and the proxy on a loop of their own, in a thread (Hypothesis drives sync tests)."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, Any] = {}

    async def start() -> None:
        upstream = await start_upstream()
        upstream.reply_with(json_reply(completion("ok")))
        proxy = await start_proxy(upstream.base_url)
        holder.update(upstream=upstream, proxy=proxy)
        ready.set()

    thread = threading.Thread(target=lambda: (loop.run_until_complete(start()), loop.run_forever()), daemon=True)
    thread.start()
    assert ready.wait(20)
    yield Servers(str(holder["proxy"].make_url("")).rstrip("/"), holder["upstream"])

    async def stop() -> None:
        await holder["proxy"].close()
        await holder["upstream"].server.close()

    asyncio.run_coroutine_threadsafe(stop(), loop).result(20)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(20)


@pytest.mark.parametrize("dialect", sorted(PATHS))
@settings(max_examples=examples(40), suppress_health_check=list(HealthCheck))
@given(body=chat_body())
def test_no_proxy_made_error_and_nothing_but_additions(servers: Servers, dialect: str, body: dict[str, Any]) -> None:
    path, key, shape = PATHS[dialect]
    raw = json.dumps(shape(body), separators=(",", ":"), ensure_ascii=False).encode()
    seen_before = len(servers.upstream.seen)
    request = urllib.request.Request(servers.proxy_url + path, data=raw, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, outcome, reply = response.status, response.headers.get(OUTCOME_HEADER), response.read()
    except urllib.error.HTTPError as error:
        status = error.code
    assert status == 200, "the upstream always answers 200: any other status is the proxy's own"
    if outcome == "incomplete":  # handed back: examples drawn alike share a conversation, which can stay stuck
        assert len(servers.upstream.seen) == seen_before, "a hand-back is the proxy's own reply"
        assert isinstance(json.loads(reply), dict)
        return
    sent = servers.upstream.seen[seen_before].body
    if sent == raw:
        return
    before, after = json.loads(raw), json.loads(sent)
    kept = [e for e in after[key] if not (isinstance(e, dict) and "[repair-proxy]" in json.dumps(e))]
    assert kept == before[key] or "tools" in after
    for entry in before[key]:
        assert json.dumps(entry, separators=(",", ":"), ensure_ascii=False).encode() in sent
