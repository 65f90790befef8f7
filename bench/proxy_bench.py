"""Proxy overhead, measured side by side in one run.

Targets, each a separate process on loopback in front of the same instant upstream:
  direct        the upstream itself
  minimal       bench/minimal_relay.py, the floor of what a Python aiohttp hop costs
  repair_off    repair-proxy --no-repair (byte-transparent)
  repair_on     repair-proxy with the default policy, as agents use it: each measured request
                is the next request of its own conversation (the proxy has seen the
                transcript up to the previous turn), so it folds one new turn, a failing
                test run with its multi-KB output, and re-inserts the nudges made so far

Workload: a 50-message agent transcript (tool calls, multi-KB outputs), non-streaming and
streaming. Prints added latency p50/p99 over direct, time to first byte, requests/s at a fixed
concurrency, and the ratios the targets are stated in.

  repair_on@base  (with --baseline DIR) the same, run from another checkout of the project
                (say, `git worktree add /tmp/base <commit>`): a change measured against its
                baseline in one run, on the same machine at the same time

Run: python bench/proxy_bench.py [--requests N] [--concurrency C] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from workload import request_body, transcript

HERE = Path(__file__).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_ready(url: str, deadline: float = 20.0) -> None:
    start = time.monotonic()
    async with aiohttp.ClientSession() as client:
        while time.monotonic() - start < deadline:
            try:
                async with client.get(url) as response:
                    if response.status < 500:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not come up within {deadline}s")


@contextmanager
def processes(commands: list[tuple[list[str], dict[str, str]]]) -> Iterator[None]:
    """Each (argv, extra environment) as a process, stopped on exit; a PYTHONPATH in the extra
    environment is also the process's working directory (`python -m` looks there first)."""
    env = {**os.environ, "REPAIR_PROXY_VERDICTS": ""}  # no durable memory: nothing written by a benchmark
    procs = [
        subprocess.Popen(
            cmd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**env, **extra},
            cwd=extra.get("PYTHONPATH"),
        )
        for cmd, extra in commands
    ]
    try:
        yield
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=10)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass(frozen=True)
class Workload:
    body: bytes
    previous: bytes
    """The same conversation one turn earlier: sent (untimed) first where `warm` is set."""


async def one(client: aiohttp.ClientSession, url: str, body: bytes, conversation: str | None) -> tuple[float, float]:
    """One timed request: (total seconds, seconds to the first body byte)."""
    headers = {"Content-Type": "application/json"}
    if conversation is not None:
        headers["X-Repair-Conversation"] = conversation
    start = time.perf_counter()
    async with client.post(url, data=body, headers=headers) as response:
        first = None
        async for _chunk in response.content.iter_any():
            if first is None:
                first = time.perf_counter()
        end = time.perf_counter()
    assert response.status == 200, response.status
    assert "X-Repair-Outcome" not in response.headers, "the measured request must be forwarded, not answered"
    return end - start, (first or end) - start


async def prime(client: aiohttp.ClientSession, url: str, body: bytes, conversations: list[str]) -> None:
    """Send each conversation's previous request (untimed), as the agent did one turn earlier."""
    for conversation in conversations:
        await one(client, url, body, conversation)


async def latency(url: str, work: Workload, count: int, warm: bool) -> tuple[list[float], list[float]]:
    totals, firsts = [], []
    conversations: list[str | None] = [uuid.uuid4().hex for _ in range(count)] if warm else [None] * count
    async with aiohttp.ClientSession() as client:
        if warm:
            await prime(client, url, work.previous, [c for c in conversations if c is not None])
        for _ in range(5):
            await one(client, url, work.body, None)
        for conversation in conversations:
            total, first = await one(client, url, work.body, conversation)
            totals.append(total)
            firsts.append(first)
    return totals, firsts


async def throughput(url: str, work: Workload, count: int, concurrency: int, warm: bool) -> float:
    """Requests per second at `concurrency`; warm conversations are primed before the clock starts."""
    ids = [uuid.uuid4().hex for _ in range(count)]
    headers = {"Content-Type": "application/json"}

    async def send(client: aiohttp.ClientSession, body: bytes, conversation: str) -> None:
        extra = {"X-Repair-Conversation": conversation} if warm else {}
        async with client.post(url, data=body, headers={**headers, **extra}) as response:
            await response.read()
            assert response.status == 200, response.status

    async def drain(client: aiohttp.ClientSession, body: bytes) -> None:
        queue = list(ids)

        async def worker() -> None:
            while queue:
                await send(client, body, queue.pop())

        await asyncio.gather(*(worker() for _ in range(concurrency)))

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as client:
        if warm:
            await drain(client, work.previous)
        start = time.perf_counter()
        await drain(client, work.body)
        return count / (time.perf_counter() - start)


async def run(requests: int, concurrency: int, baseline: Path | None) -> None:
    names = ["upstream", "minimal", "repair_off", "repair_on"] + (["repair_on@base"] if baseline else [])
    ports = {name: free_port() for name in names}
    upstream = f"http://127.0.0.1:{ports['upstream']}/v1"
    py = sys.executable
    serve = [py, "-m", "proxy", "serve", "--upstream", upstream, "--port"]
    commands = [
        ([py, str(HERE / "fast_upstream.py"), str(ports["upstream"])], {}),
        ([py, str(HERE / "minimal_relay.py"), str(ports["minimal"]), upstream], {}),
        ([*serve, str(ports["repair_off"]), "--no-repair"], {}),
        ([*serve, str(ports["repair_on"])], {}),
    ]
    if baseline is not None:  # the other checkout's package first on the path, run from there
        commands.append(([*serve, str(ports["repair_on@base"])], {"PYTHONPATH": str(baseline.resolve())}))
    targets = {"direct": upstream} | {name: f"http://127.0.0.1:{ports[name]}/v1" for name in names[1:]}
    messages = transcript(24, stuck_runs=4)  # stuck 4 runs at a time: nudges, never a halt
    bodies = {
        "non-streaming": Workload(request_body(messages), request_body(messages[:-2])),
        "streaming": Workload(request_body(messages, stream=True), request_body(messages[:-2], stream=True)),
    }
    print(
        f"workload: {len(messages)} messages, {len(bodies['non-streaming'].body) / 1024:.0f} KiB per request; "
        f"{requests} sequential requests per target, throughput at concurrency {concurrency}"
    )
    with processes(commands):
        for url in targets.values():
            await wait_ready(url + "/models")
        for mode, body in bodies.items():
            stats: dict[str, dict[str, float]] = {}
            # interleave targets round by round so machine noise hits all of them alike
            samples: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in targets}
            for _round in range(5):
                for name, url in targets.items():
                    totals, firsts = await latency(
                        url + "/chat/completions", body, requests // 5, name.startswith("repair_on")
                    )
                    samples[name][0].extend(totals)
                    samples[name][1].extend(firsts)
            for name, url in targets.items():
                totals, firsts = samples[name]
                stats[name] = {
                    "p50": statistics.median(totals) * 1000,
                    "p99": percentile(totals, 0.99) * 1000,
                    "ttfb": statistics.median(firsts) * 1000,
                    "rps": await throughput(
                        url + "/chat/completions", body, requests, concurrency, name.startswith("repair_on")
                    ),
                }
            direct = stats["direct"]
            print(f"\n{mode}")
            print(
                f"  {'target':<15} {'p50 ms':>8} {'p99 ms':>8} {'added p50':>10} {'added p99':>10} {'ttfb ms':>8} {'req/s':>8} {'vs direct':>10}"
            )
            for name, s in stats.items():
                print(
                    f"  {name:<15} {s['p50']:8.2f} {s['p99']:8.2f} {s['p50'] - direct['p50']:10.2f} "
                    f"{s['p99'] - direct['p99']:10.2f} {s['ttfb']:8.2f} {s['rps']:8.0f} {s['rps'] / direct['rps']:9.0%}"
                )
            floor = stats["minimal"]["p50"] - direct["p50"]
            for name in [n for n in stats if n.startswith("repair_")]:
                added = stats[name]["p50"] - direct["p50"]
                print(
                    f"  {name}: added p50 = {added / floor:.2f}x the minimal relay's (target <= 1.25x for repair_on); "
                    f"throughput = {stats[name]['rps'] / direct['rps']:.0%} of direct (target >= 60%)"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--baseline", type=Path, help="another checkout of the project, measured beside this one")
    args = parser.parse_args()
    asyncio.run(run(args.requests, args.concurrency, args.baseline))


if __name__ == "__main__":
    main()
