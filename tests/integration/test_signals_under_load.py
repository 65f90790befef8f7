"""The README's operations claims under load, with real streams: `serve` as a real process (one
worker, or a supervisor and two), a real upstream on loopback streaming chat completions slowly
(10 chunks 0.5 s apart, then `[DONE]`: about 5.5 s each), agents reading them as they come.

- SIGTERM with eight streams in flight: the listeners close at once (a new connection is
  refused while the streams still run), all eight finish in full, and the process exits 0.
- SIGHUP to a two-worker supervisor with ten streams in flight: the supervisor passes it on,
  each worker reloads in place (same pids, its config read again), ten of ten finish in full,
  and the set serves on with the new config.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import orjson
import pytest
from support import Upstream, completion, json_reply, read_json_log, spawn_proxy, sse_reply, wait_healthy

from proxy.http.runtime.rundir import started

GAP = 0.5
"""Seconds between two chunks of the upstream's stream."""
PIECES = 10
BASE = {"id": "chatcmpl-slow", "object": "chat.completion.chunk", "created": 1700000000, "model": "m"}


def _chunk(delta: dict[str, str], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return b"data: " + orjson.dumps({**BASE, "choices": [choice]}) + b"\n\n"


CHUNKS = [
    _chunk({"role": "assistant", "content": "piece-0 "}),
    *(_chunk({"content": f"piece-{i} "}) for i in range(1, PIECES - 1)),
    _chunk({"content": f"piece-{PIECES - 1}"}, "stop"),
    b"data: [DONE]\n\n",
]
WHOLE = b"".join(CHUNKS)
AFTER = b'{"model": "m", "messages": [{"role": "user", "content": "after the reload"}]}'
STREAM_SECONDS = GAP * len(CHUNKS)


@dataclass
class Stream:
    """One agent's streamed request, read as it comes."""

    body: bytes = b""
    first: asyncio.Event = field(default_factory=asyncio.Event)
    ended_at: float | None = None


@dataclass
class Running:
    process: asyncio.subprocess.Process
    port: int
    config: Path
    log: list[dict[str, object]]
    run_dir: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/chat/completions"

    def events(self, name: str) -> list[dict[str, object]]:
        return [e for e in self.log if e.get("event") == name]


async def _logged_chats(proxy: Running, count: int) -> list[dict[str, object]]:
    """The chat requests' log lines, once `count` are in (the log is read as it comes)."""

    def chats() -> list[dict[str, object]]:
        return [e for e in proxy.events("request") if e["path"] == "/v1/chat/completions"]

    await _until(lambda: len(chats()) >= count, 10, f"{count} chat requests logged")
    return chats()


async def _until(check: Callable[[], bool], seconds: float, what: str) -> None:
    """Until `check()` is true (polled every 50 ms), `seconds` at most."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds:g} s: {what}")
        await asyncio.sleep(0.05)


@pytest.fixture
async def serve(upstream: Upstream, tmp_path: Path) -> AsyncIterator[object]:
    """Start `serve --workers N` with `config` on the slow upstream; its JSON log is collected.
    Whatever is still running at the end is killed."""
    upstream.reply_with(sse_reply(CHUNKS, gap=GAP))
    running: list[tuple[Running, asyncio.Task[None]]] = []

    async def start(workers: int, config: str = '[store]\nverdicts = ""\n') -> Running:
        path = tmp_path / "config.toml"
        path.write_text(config)
        process, port = await spawn_proxy(
            "--config", str(path), "--upstream", upstream.base_url, stdout=asyncio.subprocess.PIPE, workers=workers
        )
        assert process.stdout is not None
        served = Running(process, port, path, [])
        running.append((served, asyncio.create_task(read_json_log(process.stdout, served.log))))
        await wait_healthy(port)
        await _until(lambda: len(served.events("listening")) == workers, 20, f"{workers} workers listening")
        supervising = served.events("supervising")
        served.run_dir = Path(str(supervising[0]["run_dir"])) if supervising else None
        return served

    yield start
    for served, reader in running:
        if served.process.returncode is None:
            served.process.kill()
            await served.process.wait()
        await asyncio.wait_for(reader, 10)


async def _stream(url: str, index: int, into: Stream, authorization: str = "Bearer sk-agent") -> None:
    """A streamed chat request on its own connection (so the kernel may hand it to any worker)."""
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": f"agent {index}: say hi"}]}
    timeout = aiohttp.ClientTimeout(total=STREAM_SECONDS + 20)
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True), timeout=timeout) as client,
        client.post(url, data=orjson.dumps(body), headers={"Authorization": authorization}) as response,
    ):
        assert response.status == 200, await response.text()
        async for piece in response.content.iter_any():
            into.body += piece
            into.first.set()
    into.ended_at = time.monotonic()


@pytest.fixture
async def in_flight() -> AsyncIterator[Callable[[str, int], Awaitable[tuple[list[Stream], list[asyncio.Task[None]]]]]]:
    """Start `count` streams (see `start`). At the end, those still running are cancelled and
    every one is awaited: a test that failed leaves no task behind whose error would be reported
    later, by the collector, in another test (an asyncio "exception was never retrieved" logged
    from a finalizer, with a traceback formatted inside whatever that test was doing)."""
    started: list[asyncio.Task[None]] = []

    async def start(url: str, count: int) -> tuple[list[Stream], list[asyncio.Task[None]]]:
        """`count` streams started, each once its first chunk arrived (15 s at most); a stream
        that fails first raises its error."""
        streams = [Stream() for _ in range(count)]
        tasks = [asyncio.create_task(_stream(url, i, s)) for i, s in enumerate(streams)]
        started.extend(tasks)
        firsts = asyncio.ensure_future(asyncio.gather(*(s.first.wait() for s in streams)))
        done, _pending = await asyncio.wait([firsts, *tasks], timeout=15, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if task is not firsts:
                task.result()  # a stream's error, or one that ended before the others began
        if not firsts.done():
            firsts.cancel()
            raise AssertionError("not every stream got its first chunk within 15 s")
        assert not any(task.done() for task in tasks), "a stream ended before all were in flight"
        return streams, tasks

    yield start
    for task in started:
        task.cancel()
    await asyncio.gather(*started, return_exceptions=True)


async def _refused(port: int, seconds: float) -> float:
    """When a new connection to the port is first refused (polled on fresh connections). One
    accepted before the listeners closed is answered, and one caught in a closing listener's
    queue is reset: either way the polling goes on."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            async with (
                aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as client,
                client.get(f"http://127.0.0.1:{port}/healthz", timeout=aiohttp.ClientTimeout(total=2)) as response,
            ):
                await response.read()
        except aiohttp.ClientOSError as exc:  # the connector's errors (connect) and the request's (send, read)
            if exc.errno == errno.ECONNREFUSED:
                return time.monotonic()
            # reset, at connect or at the request: the kernel had completed the handshake into
            # the accept queue of a listener that then closed; never served
            assert exc.errno == errno.ECONNRESET, exc
        await asyncio.sleep(0.05)
    raise AssertionError(f"new connections were still accepted {seconds:g} s after SIGTERM")


@pytest.mark.parametrize("workers", [1, 2])
async def test_sigterm_with_eight_streams_in_flight_finishes_them_all_and_exits_0(
    serve, in_flight, workers: int
) -> None:
    """The drain is aiohttp's: the listening sockets close at once (the supervisor's claim on the
    port never listens), so a new connection is refused (never a 503); the requests in flight
    get `server.drain_timeout` (120 s) and the process exits when they end, not at that time."""
    proxy = await serve(workers)
    streams, tasks = await in_flight(proxy.url, 8)
    signalled = time.monotonic()
    proxy.process.send_signal(signal.SIGTERM)
    refused_at = await _refused(proxy.port, 3)
    assert proxy.process.returncode is None, "the process exited before its streams finished"
    await asyncio.wait_for(asyncio.gather(*tasks), STREAM_SECONDS + 15)
    for index, stream in enumerate(streams):
        assert stream.body == WHOLE, f"stream {index} was cut: {stream.body[-80:]!r}"
        assert stream.ended_at is not None and stream.ended_at > refused_at  # refused while they still ran
    code = await asyncio.wait_for(proxy.process.wait(), 20)
    assert code == 0
    assert time.monotonic() - signalled < STREAM_SECONDS + 10  # the drain ended with the streams
    chats = await _logged_chats(proxy, 8)
    assert [(e["status"], e["end"]) for e in chats] == [(200, "complete")] * 8  # as each worker saw it
    if workers > 1:
        assert sorted(int(str(e["worker"])) for e in proxy.events("worker_exited")) == [0, 1]
        assert [e["code"] for e in proxy.events("worker_exited")] == [0, 0]
        assert proxy.events("worker_died") == []


async def test_sighup_to_two_workers_with_ten_streams_in_flight_reloads_each_and_drops_none(
    serve, in_flight, upstream: Upstream
) -> None:
    """The config's upstream key changes with the reload: the ten streams began with the old one
    and finish in full; afterwards each worker (asked through its own socket) sends the new one,
    and the port serves. Reload is in place: the same two worker processes, none restarted."""
    config = '[store]\nverdicts = ""\n[upstream]\napi_key = "sk-upstream-{}"\n'
    proxy = await serve(2, config.format("before"))
    assert proxy.run_dir is not None
    pids = started(proxy.run_dir)
    streams, tasks = await in_flight(proxy.url, 10)
    proxy.config.write_text(config.format("after"))
    proxy.process.send_signal(signal.SIGHUP)
    await _until(lambda: len(proxy.events("reloaded")) == 2, 15, "both workers logged reloaded")
    assert sorted(str(e["worker"]) for e in proxy.events("reloaded")) == ["0", "1"]
    assert all(s.ended_at is None for s in streams), "a stream ended before the reload: too short to test it"
    await asyncio.wait_for(asyncio.gather(*tasks), STREAM_SECONDS + 15)
    for index, stream in enumerate(streams):
        assert stream.body == WHOLE, f"stream {index} was cut: {stream.body[-80:]!r}"
    in_flight = [seen.headers.get("Authorization") for seen in upstream.seen]
    assert in_flight == ["Bearer sk-upstream-before"] * 10
    chats = await _logged_chats(proxy, 10)
    assert [(e["status"], e["end"]) for e in chats] == [(200, "complete")] * 10

    assert started(proxy.run_dir) == pids  # reloaded in place, no worker restarted
    assert proxy.events("worker_died") == []
    upstream.reply_with(json_reply(completion("after the reload")))
    for index in (0, 1):  # each worker serves, with the new config
        connector = aiohttp.UnixConnector(path=str(proxy.run_dir / f"worker-{index}.sock"))
        async with (
            aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=10)) as client,
            client.post("http://worker/v1/chat/completions", data=AFTER) as response,
        ):
            assert response.status == 200
            assert orjson.loads(await response.read())["choices"][0]["message"]["content"] == "after the reload"
        assert upstream.seen[-1].headers.get("Authorization") == "Bearer sk-upstream-after"
    assert [e["worker"] for e in (await _logged_chats(proxy, 12))[10:]] == [0, 1]  # each its own socket's
    async with (  # and through the port, as agents come
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as client,
        client.post(proxy.url, data=AFTER) as response,
    ):
        assert response.status == 200
        assert orjson.loads(await response.read())["choices"][0]["message"]["content"] == "after the reload"
    with contextlib.suppress(ProcessLookupError):
        proxy.process.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(proxy.process.wait(), 20) == 0
