"""The recovery bench's logging relay (`bench/tap.py`): what a proxy arm sent the model server and
what came back, one line per exchange, with the bytes passed on unchanged both ways; and the
record of which of those lines belong to one run (`recovery.exchanged`)."""

from __future__ import annotations

import json
import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import tap
from recovery import exchanged, proxies

REPLY = b'{"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [{"id": "c1"}]}}]}'


async def _upstream(status: int, body: bytes, seen: list[bytes]) -> TestServer:
    async def answer(request: web.Request) -> web.Response:
        seen.append(await request.read())
        return web.Response(body=body, status=status, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", answer)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    return server


async def _through_tap(status: int, reply: bytes, sent: bytes, out: Path) -> tuple[int, bytes, list[bytes]]:
    seen: list[bytes] = []
    upstream = await _upstream(status, reply, seen)
    relay = TestServer(tap.app(str(upstream.make_url("")).rstrip("/"), out), host="127.0.0.1")
    await relay.start_server()
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.post(relay.make_url("/v1/chat/completions"), data=sent) as got,
        ):
            return got.status, await got.read(), seen
    finally:
        await relay.close()
        await upstream.close()


async def test_the_tap_passes_both_ways_unchanged_and_logs_the_request_tail_and_the_reply(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": f"turn {n}"} for n in range(5)]
    sent = json.dumps({"messages": messages, "seed": 3, "tool_choice": "auto", "response_format": {}}).encode()
    status, body, seen = await _through_tap(200, REPLY, sent, tmp_path / "full.jsonl")
    assert (status, body, seen) == (200, REPLY, [sent])
    (line,) = (tmp_path / "full.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert record["request"] == {
        "messages": 5, "tail": messages[-2:], "response_format": True, "tool_choice": "auto", "seed": 3,
        "temperature": None,
    }  # fmt: skip
    assert record["reply"]["tool_calls"] == [{"id": "c1"}] and record["status"] == 200


async def test_an_upstream_error_that_is_not_json_reaches_the_proxy_as_sent_and_is_logged_raw(tmp_path: Path) -> None:
    status, body, _ = await _through_tap(503, b"model loading", b"not json either", tmp_path / "full.jsonl")
    assert (status, body) == (503, b"model loading")
    record = json.loads((tmp_path / "full.jsonl").read_text())
    assert record["request"] is None and record["raw"] == "model loading" and "reply" not in record


def test_show_prints_each_exchange_as_the_last_message_then_the_reply() -> None:
    line = json.dumps(
        {"request": {"messages": 7, "tail": [{"role": "tool", "content": "FAILED"}]}, "reply": {"content": "ok"}}
    )
    shown = tap.show([line, line], first=1)
    assert shown.splitlines() == ["[1] n=7 rf=None tc=null seed=None last=tool: 'FAILED'", "   reply: 'ok' "]


def test_a_run_s_exchanges_are_the_lines_its_arm_s_tap_gained_while_it_went(tmp_path: Path) -> None:
    assert exchanged(None, "full", 0) is None  # no --tap
    assert exchanged(tmp_path, "direct", 0) is None  # the model server itself: nothing between
    assert exchanged(tmp_path, "full", 0) == (0, 0)  # no exchange yet
    (tmp_path / "full.jsonl").write_text("{}\n{}\n")
    first = exchanged(tmp_path, "full", 0)
    with (tmp_path / "full.jsonl").open("a") as f:
        f.write("{}\n")
    assert first == (0, 2) and exchanged(tmp_path, "full", 2) == (2, 3)


class _Model(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(REPLY)))
        self.end_headers()
        self.wfile.write(REPLY)

    def log_message(self, *_: object) -> None:
        return


def test_with_a_tap_each_proxy_arm_reaches_the_model_through_its_own_relay(tmp_path: Path) -> None:
    model = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    threading.Thread(target=model.serve_forever, daemon=True).start()
    try:
        with proxies(f"http://127.0.0.1:{model.server_port}/v1", tmp_path, ["noblock", "full"], tmp_path) as urls:
            for arm in ("noblock", "full", "full"):
                sent = {"model": "m", "messages": [{"role": "user", "content": arm}]}
                request = urllib.request.Request(urls[arm] + "/chat/completions", data=json.dumps(sent).encode())
                with urllib.request.urlopen(request, timeout=30) as got:
                    assert json.loads(got.read())["choices"][0]["message"]["tool_calls"] == [{"id": "c1"}]
    finally:
        model.shutdown()
    lines = {arm: (tmp_path / f"{arm}.jsonl").read_text().splitlines() for arm in ("noblock", "full")}
    assert [len(lines["noblock"]), len(lines["full"])] == [1, 2]
    assert json.loads(lines["noblock"][0])["request"]["tail"][-1]["content"] == "noblock"
