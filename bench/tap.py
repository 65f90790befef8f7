"""A logging relay for the benches: what a proxy sent the model server, and what came back.

Put between a proxy and the model server, it passes every request on unchanged and writes one
JSON line per POST: the path and status, the request's last two messages with what steers
the generation (`response_format` present, `tool_choice`, seed, temperature), and the reply's
first message (else the first 2,000 bytes of the raw body). Reading these lines turn by turn is
how the proxy's own retries were found asking the model for calls that could not help; the
recovery bench starts one per proxy arm with `--tap DIR`.

The relay reads each reply whole before answering (a streamed reply reaches the proxy at once
at its end): a bench instrument, never on a path whose timing is measured.

    python bench/tap.py serve --port 8081 --upstream http://127.0.0.1:8080 --out tap.jsonl
    python bench/tap.py show tap.jsonl [--first N] [--last M]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from proxy.http.upstream.forward import upstream_headers

SESSION = web.AppKey("session", aiohttp.ClientSession)


def _request(body: bytes) -> dict[str, Any] | None:
    try:
        sent = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(sent, dict):
        return None
    messages = sent.get("messages") if isinstance(sent.get("messages"), list) else []
    return {
        "messages": len(messages),
        "tail": messages[-2:],
        "response_format": "response_format" in sent,
        "tool_choice": sent.get("tool_choice"),
        "seed": sent.get("seed"),
        "temperature": sent.get("temperature"),
    }


def _reply(data: bytes) -> dict[str, Any]:
    try:
        return {"reply": orjson.loads(data)["choices"][0]["message"]}
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        return {"raw": data[:2000].decode(errors="replace")}


def app(upstream: str, out: Path) -> web.Application:
    """The relay: every request to `upstream` (an origin, no path), logged to `out`."""

    async def relay(request: web.Request) -> web.Response:
        body = await request.read()
        headers = upstream_headers(request.headers)  # the proxy's own: hop-by-hop out, Host and length reset
        session: aiohttp.ClientSession = request.app[SESSION]
        async with session.request(request.method, upstream + request.path_qs, data=body, headers=headers) as got:
            data = await got.read()
            if request.method != "POST":  # a readiness probe, a model list: passed on, not logged
                return web.Response(body=data, status=got.status, content_type=got.content_type)
            record = {"t": time.time(), "path": request.path, "status": got.status, "request": _request(body)}
            with out.open("a") as sink:
                sink.write(json.dumps({**record, **_reply(data)}) + "\n")
            return web.Response(body=data, status=got.status, content_type=got.content_type)

    async def session(application: web.Application) -> Any:
        application[SESSION] = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=900))
        yield
        await application[SESSION].close()

    application = web.Application(client_max_size=1 << 28)
    application.cleanup_ctx.append(session)
    application.router.add_route("*", "/{tail:.*}", relay)
    return application


def show(lines: list[str], first: int = 0, last: int | None = None) -> str:
    """Each exchange as two lines: the request's last message, then the reply (content, calls)."""
    shown = []
    for index, line in enumerate(lines[first:last], first):
        record = json.loads(line)
        sent = record.get("request") or {}
        tail = sent.get("tail") or [{}]
        said = tail[-1].get("content")
        said = said if isinstance(said, str) else json.dumps(said)
        steer = (
            f"rf={sent.get('response_format')} tc={json.dumps(sent.get('tool_choice'))[:60]} seed={sent.get('seed')}"
        )
        shown.append(f"[{index}] n={sent.get('messages')} {steer} last={tail[-1].get('role')}: {str(said)[-250:]!r}")
        reply = record.get("reply") or {}
        calls = json.dumps(reply["tool_calls"])[:350] if reply.get("tool_calls") else ""
        shown.append(f"   reply: {(reply.get('content') or '')[:350]!r} {calls}{record.get('raw', '')[:200]}")
    return "\n".join(shown)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve")
    serve.add_argument("--port", type=int, required=True)
    serve.add_argument("--upstream", required=True, help="the model server's origin, e.g. http://127.0.0.1:8080")
    serve.add_argument("--out", type=Path, required=True)
    read = sub.add_parser("show")
    read.add_argument("file", type=Path)
    read.add_argument("--first", type=int, default=0)
    read.add_argument("--last", type=int)
    args = parser.parse_args()
    if args.command == "serve":
        web.run_app(app(args.upstream.rstrip("/"), args.out), host="127.0.0.1", port=args.port, print=None)
    else:
        print(show(args.file.read_text().splitlines(), args.first, args.last))


if __name__ == "__main__":
    main()
