"""Soak: the proxy under hostile input and long conversations, bounded, printing RSS and fds.

Three parts, each against a real proxy process in front of `fast_upstream.py`:

  stall    each pathological body (30,000 blank lines, a 6 KB line of `  File "` fragments,
           40,000 `ESC ]`, a 1 MB line, a 50,000-message transcript) sent repeatedly while
           /healthz is polled every 5 ms: /healthz p50/p99/max, the requests' total time, and
           how many analyses were given up past the budget
  memory   CONVERSATIONS conversations of TURNS turns each (one request per conversation,
           the whole transcript, as a replica that never saw it gets it), against a cache bound
           of CACHE_MB: RSS and the cache's own count as they grow
  fuzz     randomly mutated and truncated agent bodies for SECONDS: RSS and open fds each
           second; after it, RSS against idle

Run: python bench/soak.py [--part stall,memory,fuzz] [--conversations 2000] [--turns 300]
                          [--cache-mb 64] [--seconds 60]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import aiohttp
import orjson
from proxy_bench import free_port, rss_mb, wait_ready
from workload import TOOLS, request_body, transcript

HERE = Path(__file__).resolve().parent


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@contextmanager
def stack(config: str = "") -> Iterator[tuple[str, int]]:
    """fast_upstream and the proxy (with `config` as its TOML) as processes; yields (proxy URL, pid)."""
    up, port = free_port(), free_port()
    upstream = f"http://127.0.0.1:{up}/v1"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("REPAIR_PROXY_")}, "REPAIR_PROXY_VERDICTS": "",
           "REPAIR_PROXY_LOG_LEVEL": "error"}  # fmt: skip
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as file:
        file.write(config)
    # one worker: what is measured is one process's memory and one event loop's latency
    serve = [sys.executable, "-m", "proxy", "serve", "--workers", "1", "--port", str(port), "--upstream", upstream]
    serve += ["--config", file.name]
    procs = [
        subprocess.Popen([sys.executable, str(HERE / "fast_upstream.py"), str(up)]),
        subprocess.Popen(serve, env=env, cwd=HERE.parent),
    ]
    try:
        asyncio.run(wait_ready(f"http://127.0.0.1:{port}/healthz"))
        asyncio.run(wait_ready(upstream + "/models"))
        yield f"http://127.0.0.1:{port}", procs[1].pid
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=20)
        os.unlink(file.name)


def _failing_turn(output: str) -> list[dict[str, object]]:
    call = {
        "id": "call_p",
        "type": "function",
        "function": {"name": "execute_bash", "arguments": '{"command": "python -m pytest"}'},
    }
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_p", "content": output},
    ]


def pathological() -> dict[str, bytes]:
    start = [{"role": "system", "content": "agent"}, {"role": "user", "content": "fix it"}]
    bodies = {
        "30k_blank_lines": "\n" * 30000 + "FAILED tests/t.py::x\n",
        "6kb_file_fragments": '  File "' * 800 + "/a/b.py\nFAILED tests/t.py::x\n",
        "40k_osc_escapes": "\x1b]" * 40000,
        "1mb_line": "x" * 1_000_000,
    }
    out = {
        name: orjson.dumps({"model": "m", "tools": TOOLS, "messages": [*start, *_failing_turn(text)]})
        for name, text in bodies.items()
    }
    out["50k_messages"] = request_body(transcript(25000, scale=0))
    return out


async def _poll(url: str, stop: asyncio.Event, samples: list[float]) -> None:
    async with aiohttp.ClientSession() as client:
        while not stop.is_set():
            started = time.perf_counter()
            async with client.get(url) as response:
                await response.read()
            samples.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.005)


async def _abandoned(base: str) -> float:
    async with aiohttp.ClientSession() as client, client.get(base + "/metrics") as response:
        text = await response.text()
    return sum(float(l.split()[-1]) for l in text.splitlines() if l.startswith("repair_proxy_analysis_abandoned_total"))  # noqa: E741


async def stall(base: str, repeats: int = 5) -> None:
    print(f"{'body':<20} {'size':>9} {'healthz p50':>12} {'p99':>7} {'max':>7} {'request ms':>11} {'abandoned':>10}")
    for name, body in pathological().items():
        samples: list[float] = []
        stop = asyncio.Event()
        poller = asyncio.create_task(_poll(base + "/healthz", stop, samples))
        await asyncio.sleep(0.2)
        before = await _abandoned(base)
        times = []
        async with aiohttp.ClientSession() as client:
            for n in range(repeats):
                started = time.perf_counter()
                headers = {"X-Repair-Conversation": f"stall-{name}-{n}", "Content-Type": "application/json"}
                async with client.post(base + "/v1/chat/completions", data=body, headers=headers) as response:
                    await response.read()
                times.append((time.perf_counter() - started) * 1000)
        stop.set()
        await poller
        abandoned = await _abandoned(base) - before
        q = sorted(samples)
        print(
            f"{name:<20} {len(body) / 1e6:>7.2f}MB {statistics.median(q):>10.1f}ms {q[int(0.99 * (len(q) - 1))]:>5.1f}ms"
            f" {q[-1]:>5.1f}ms {statistics.median(times):>9.1f}ms {abandoned:>6.0f}/{repeats}"
        )


async def memory(base: str, pid: int, conversations: int, turns: int, bound_mb: int) -> None:
    messages = transcript(turns, scale=0, stuck_runs=3)
    body = request_body(messages)
    idle = rss_mb(pid)
    print(f"one conversation: {turns} turns, {len(body) / 1e3:.0f} KB per request; idle RSS {idle:.0f} MB")
    warm = idle
    async with aiohttp.ClientSession() as client:
        for n in range(1, conversations + 1):
            headers = {"X-Repair-Conversation": f"mem-{n}", "Content-Type": "application/json"}
            async with client.post(base + "/v1/chat/completions", data=body, headers=headers) as response:
                await response.read()
            if n == 1:
                warm = rss_mb(pid)
                print(f"  after the first conversation (tokenizer and parsers loaded): RSS {warm:.0f} MB", flush=True)
            if n % max(1, conversations // 10) == 0:
                print(f"  {n:>6} conversations: RSS {rss_mb(pid):7.0f} MB, fds {fds(pid)}", flush=True)
    end = rss_mb(pid)
    print(f"RSS grew {end - idle:.0f} MB over idle, {end - warm:.0f} MB over the first conversation")
    bar = idle + bound_mb  # MB here are MiB, as the bound's
    print(f"bound + idle = {bar:.0f} MB: RSS {end:.0f} MB, {'under' if end < bar else 'over'} by {abs(bar - end):.1f}")


def mutate(rng: random.Random, body: bytes) -> bytes:
    choice = rng.randint(0, 5)
    if choice == 0:
        return body[: rng.randint(0, len(body))]
    if choice == 1:
        at = rng.randint(0, len(body) - 1)
        return body[:at] + bytes([rng.randint(0, 255)]) + body[at + 1 :]
    data = orjson.loads(body)
    messages = data["messages"]
    if choice == 2 and messages:
        messages[rng.randrange(len(messages))] = rng.choice(
            [None, 3, "x", [], {"role": "wizard"}, {"tool_call_id": [1]}]
        )
    elif choice == 3:
        data["seed"] = 2**70
    elif choice == 4 and messages:
        message = messages[rng.randrange(len(messages))]
        if isinstance(message, dict):
            message["content"] = rng.choice([None, [{"type": "text", "text": "x"}], {"a": 1}, "\x1b]" * 2000])
    return (
        orjson.dumps(data, option=orjson.OPT_PASSTHROUGH_BIG_INT)
        if hasattr(orjson, "OPT_PASSTHROUGH_BIG_INT")
        else _dumps(data)
    )


def _dumps(data: object) -> bytes:
    import json  # noqa: PLC0415 - the standard library keeps big integers exact

    return json.dumps(data).encode()


async def fuzz(base: str, pid: int, seconds: float) -> None:
    rng = random.Random(7)
    seeds = [request_body(transcript(k, scale=1)) for k in (3, 12, 40)]
    idle = rss_mb(pid)
    print(f"idle RSS {idle:.0f} MB, fds {fds(pid)}")
    sent = 0
    started = time.monotonic()
    next_print = started + 1
    async with aiohttp.ClientSession() as client:
        while time.monotonic() - started < seconds:
            body = mutate(rng, rng.choice(seeds))
            headers = {"X-Repair-Conversation": f"fuzz-{rng.randrange(500)}", "Content-Type": "application/json"}
            async with client.post(base + "/v1/chat/completions", data=body, headers=headers) as response:
                await response.read()
                assert response.status < 500 or response.status == 502, response.status
            sent += 1
            if time.monotonic() >= next_print:
                print(
                    f"  {time.monotonic() - started:5.0f}s {sent:>7} bodies: RSS {rss_mb(pid):6.0f} MB, fds {fds(pid)}",
                    flush=True,
                )
                next_print += max(1.0, seconds / 10)
    print(f"after {sent} bodies: RSS {rss_mb(pid):.0f} MB ({rss_mb(pid) / idle:.2f}x idle), fds {fds(pid)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", default="stall,memory,fuzz")
    parser.add_argument("--conversations", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--cache-mb", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=60)
    args = parser.parse_args()
    parts = args.part.split(",")
    if "stall" in parts:
        print("== stall: /healthz while each pathological body is analysed")
        with stack() as (base, _pid):
            asyncio.run(stall(base))
    if "memory" in parts:
        print(f"\n== memory: cache bound {args.cache_mb} MB")
        config = f"[store]\nstate_cache_bytes = {args.cache_mb * 1024 * 1024}\n[limits]\nanalysis_budget_ms = 60000\n"
        with stack(config) as (base, pid):
            asyncio.run(memory(base, pid, args.conversations, args.turns, args.cache_mb))
    if "fuzz" in parts:
        print(f"\n== fuzz: {args.seconds:g} s of mutated bodies")
        with stack() as (base, pid):
            asyncio.run(fuzz(base, pid, args.seconds))


if __name__ == "__main__":
    main()
