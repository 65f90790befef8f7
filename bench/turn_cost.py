"""The cost of reading a turn (issue 29): what a hop adds when a conversation grows by one turn.

Each timed request is the next turn of one of many conversations (`--conversations`, 30), at each transcript
size (`--sizes`, 50 and 600 messages): conversation c's k-th timed request carries its transcript (workload.
transcript, seed c: an assistant message with one tool call and its result per turn) up to size + 2k messages.
Before the clock starts, every conversation is primed on every target with its starting transcript, sent
untimed once, `PRIMES` times to a target that analyses (a long history first seen is folded over a few requests,
each within the analysis budget), so what is timed is growth by one turn, an agent's steady state, not a cold fold. Conversation ids (the
`X-Repair-Conversation` header) are fresh per run, size and target: no two share state.

Targets, each its own process(es) on loopback in front of the same instant upstream (bench/fast_upstream.py):
  direct          the upstream itself
  relay           bench/minimal_relay.py, the floor of a Python aiohttp hop
  repair_off      repair-proxy serve --no-repair --workers 1
  repair_on       repair-proxy serve --workers 1, the default policy
  workers=2       repair-proxy serve --workers 2
  repair_on@DIR   (--baseline DIR, repeatable) repair_on from another checkout, run with PYTHONPATH and cwd DIR
  litellm         (--litellm) LiteLLM's proxy 1.106.2, one worker, an OpenAI pass-through with a master key and
                  no database; its venv is made first if missing

Interleaved request by request: each step's request goes to every target in turn, in an order shuffled per step
(seeded), one request in flight at a time, so machine noise falls on all alike.

Per size and target: p50 and p99 latency; added p50/p99 = the target's p50/p99 minus direct's; CPU per request =
utime+stime of the target's processes and their children over the timed requests, divided by their number (for
direct: the upstream's, per request it served, from all targets). For scale, the median time of one orjson.loads
of the largest body of each size. Then the issue's ratios, for repair_on and each repair_on@DIR ("added" as above):
  added p50 / relay's added p50, at the smallest size                       bar <= 1.5x
  (added p50 - relay's added p50) / orjson.loads, at the largest size       bar <= 2x
  CPU per request / relay's, each size                                      bar <= 1.5x
  workers=2's CPU per request / repair_on's, each size                      bar 0.9x-1.1x
  litellm's added p50 / repair_on's added p50, each size                    bar >= 25x
With --runs N the whole measurement is repeated with fresh processes and ids, then each number's mean and range
(min-max) over the runs is printed.

Run: python bench/turn_cost.py [--sizes 50,600] [--conversations 30] [--requests 300] [--runs N] [--stream]
                               [--only NAMES] [--baseline DIR]... [--litellm]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import orjson
from proxy_bench import Command, _supports_workers, cpu_seconds, free_port, percentile, processes, wait_ready
from workload import request_body, transcript

HERE = Path(__file__).parent
LITELLM_VENV = Path.home() / ".cache" / "repair-proxy" / "bench" / "litellm-proxy"
LITELLM_KEY = "sk-bench-turn-cost"
Numbers = dict[str, float]
"""A run's named results (latencies and CPU in ms, ratios), in print order."""


PRIMES = 8
"""Untimed sends of each conversation's starting transcript: enough for a 600-message history first seen to be
folded whole, a budget's worth per request."""


@dataclass(frozen=True)
class Target:
    name: str
    url: str
    """Base URL, ending in /v1."""
    ready: str
    """Answers a GET once the target is up."""
    headers: dict[str, str] = field(default_factory=dict)
    primes: int = 1
    """Untimed sends of each conversation's starting transcript (`PRIMES` for a target that analyses)."""


@dataclass(frozen=True)
class Setup:
    sizes: list[int]
    conversations: int
    requests: int
    stream: bool
    baselines: list[Path]
    only: set[str] | None
    litellm: bool


def ensure_litellm() -> Path:
    """LiteLLM's CLI, its venv made first if missing."""
    cli = LITELLM_VENV / "bin" / "litellm"
    if not cli.exists():
        print(f"creating {LITELLM_VENV} (litellm[proxy]==1.106.2), a few minutes", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(LITELLM_VENV)], check=True, timeout=300)
        pip = [str(LITELLM_VENV / "bin" / "pip"), "install", "--quiet", "litellm[proxy]==1.106.2"]
        subprocess.run(pip, check=True, timeout=1800)
    return cli


def litellm(upstream: str, folder: Path) -> tuple[Target, Command]:
    """LiteLLM's proxy as a pass-through to `upstream`, its config (JSON is YAML) in `folder`."""
    port = free_port()
    config = folder / "litellm.yaml"
    model = {"model_name": "bench", "litellm_params": {"model": "openai/bench", "api_base": upstream, "api_key": "x"}}
    config.write_bytes(orjson.dumps({"model_list": [model], "litellm_settings": {"drop_params": True}}))
    argv = [str(ensure_litellm()), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    env = {
        "LITELLM_MASTER_KEY": LITELLM_KEY,
        "LITELLM_LOG": "ERROR",
        "LITELLM_TELEMETRY": "False",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no fetch of the cost map at start
        "DISABLE_SCHEMA_UPDATE": "true",
        "PYTHONPATH": str(folder),  # processes() runs it from there: nothing it writes lands in the checkout
    }
    base = f"http://127.0.0.1:{port}"
    target = Target("litellm", base + "/v1", base + "/health/liveliness", {"Authorization": f"Bearer {LITELLM_KEY}"})
    return target, ([*argv, "--num_workers", "1"], env)


def plan(setup: Setup, folder: Path) -> tuple[list[Target], dict[str, Command]]:
    """The targets and their processes (keyed by target name; direct's is the upstream)."""
    upstream_port = free_port()
    upstream = f"http://127.0.0.1:{upstream_port}/v1"
    py = sys.executable

    def serve(*flags: str) -> Callable[[int], list[str]]:
        return lambda port: [py, "-m", "proxy", "serve", "--upstream", upstream, "--port", str(port), *flags]

    wanted: list[tuple[str, Callable[[int], list[str]], dict[str, str], int]] = [
        ("relay", lambda port: [py, str(HERE / "minimal_relay.py"), str(port), upstream], {}, 1),
        ("repair_off", serve("--no-repair", "--workers", "1"), {}, 1),
        ("repair_on", serve("--workers", "1"), {}, PRIMES),
        ("workers=2", serve("--workers", "2"), {}, PRIMES),
    ]
    for baseline in setup.baselines:
        flags = ("--workers", "1") if _supports_workers(baseline) else ()
        env = {"PYTHONPATH": str(baseline.resolve())}
        wanted.append((f"repair_on@{baseline.name}", serve(*flags), env, PRIMES))
    targets = [Target("direct", upstream, upstream + "/models")]
    commands: dict[str, Command] = {"direct": ([py, str(HERE / "fast_upstream.py"), str(upstream_port)], {})}
    for name, argv, env, primes in wanted:
        if setup.only is None or name in setup.only | {"relay"} or name.startswith("repair_on@"):
            port = free_port()
            base = f"http://127.0.0.1:{port}/v1"
            targets.append(Target(name, base, base + "/models", primes=primes))
            commands[name] = (argv(port), env)
    if setup.litellm:
        target, command = litellm(upstream, folder)
        targets.append(target)
        commands[target.name] = command
    return targets, commands


async def send(client: aiohttp.ClientSession, target: Target, body: bytes, conversation: str) -> float:
    """One request, its seconds; it must be forwarded and answered with a completion."""
    headers = {"Content-Type": "application/json", "X-Repair-Conversation": conversation, **target.headers}
    start = time.perf_counter()
    async with client.post(target.url + "/chat/completions", data=body, headers=headers) as response:
        payload = await response.read()
    elapsed = time.perf_counter() - start
    if response.status != 200 or b'"choices"' not in payload:
        raise RuntimeError(f"{target.name}: HTTP {response.status}: {payload[:300]!r}")
    if "X-Repair-Outcome" in response.headers:
        raise RuntimeError(f"{target.name}: the request was answered by the proxy, not forwarded")
    return elapsed


def loads_ms(body: bytes) -> float:
    """The median time of one orjson.loads of `body`, over 50."""
    return statistics.median(timeit.repeat(lambda: orjson.loads(body), number=1, repeat=50)) * 1000


async def measure(
    client: aiohttp.ClientSession, targets: list[Target], pids: dict[str, int], setup: Setup, size: int, nonce: str
) -> Numbers:
    """One size: prime every conversation, then the timed next turns, interleaved; the size's numbers."""
    turns = -(-setup.requests // setup.conversations)
    histories = [transcript((size - 2) // 2 + turns, seed=c, stuck_runs=4) for c in range(setup.conversations)]

    def body(c: int, k: int) -> bytes:
        return request_body(histories[c][: size + 2 * k], stream=setup.stream)

    def conversation(target: Target, c: int) -> str:
        return f"turn-cost-{nonce}-{size}-{target.name}-{c}"

    for c in range(setup.conversations):
        primer = body(c, 0)
        for target in targets:
            for _ in range(target.primes):
                await send(client, target, primer, conversation(target, c))
    steps = [(k, c) for k in range(1, turns + 1) for c in range(setup.conversations)][: setup.requests]
    rng = random.Random(size)
    seconds: dict[str, list[float]] = {t.name: [] for t in targets}
    largest = b""
    cpu_before = {t.name: cpu_seconds(pids[t.name]) for t in targets}
    for k, c in steps:
        request = body(c, k)
        largest = max(largest, request, key=len)
        for target in rng.sample(targets, len(targets)):
            seconds[target.name].append(await send(client, target, request, conversation(target, c)))
    cpu = {t.name: cpu_seconds(pids[t.name]) - cpu_before[t.name] for t in targets}
    cpu["direct"] /= len(targets)  # the upstream served every target's requests
    return numbers(size, seconds, cpu, len(steps), loads_ms(largest))


def numbers(size: int, seconds: dict[str, list[float]], cpu: dict[str, float], count: int, loads: float) -> Numbers:
    """Per target: p50, p99, added p50, added p99, CPU per request (all ms)."""
    p50 = {name: statistics.median(values) * 1000 for name, values in seconds.items()}
    p99 = {name: percentile(values, 0.99) * 1000 for name, values in seconds.items()}
    result = {f"{size} loads": loads}
    for name in seconds:
        result[f"{size} {name} p50"] = p50[name]
        result[f"{size} {name} p99"] = p99[name]
        result[f"{size} {name} added p50"] = p50[name] - p50["direct"]
        result[f"{size} {name} added p99"] = p99[name] - p99["direct"]
        result[f"{size} {name} cpu"] = cpu[name] / count * 1000
    return result


COLUMNS = {"p50": "p50 ms", "p99": "p99 ms", "added p50": "added p50", "added p99": "added p99", "cpu": "CPU ms/req"}


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else math.nan


def ratios(run: Numbers, sizes: list[int], names: list[str]) -> Numbers:
    """The issue's ratios, each labelled with its bar."""

    def of(size: int, name: str, metric: str) -> float:
        return run[f"{size} {name} {metric}"]

    small, large = min(sizes), max(sizes)
    result: Numbers = {}
    for name in [n for n in names if n == "repair_on" or n.startswith("repair_on@")]:
        label = f"{small} msgs: added p50 {name} / relay (bar <= 1.5x)"
        result[label] = ratio(of(small, name, "added p50"), of(small, "relay", "added p50"))
        label = f"{large} msgs: (added p50 {name} - relay) / orjson.loads (bar <= 2x)"
        result[label] = ratio(of(large, name, "added p50") - of(large, "relay", "added p50"), run[f"{large} loads"])
        for size in sizes:
            result[f"{size} msgs: CPU/req {name} / relay (bar <= 1.5x)"] = ratio(
                of(size, name, "cpu"), of(size, "relay", "cpu")
            )
    for size in sizes if {"workers=2", "repair_on"} <= set(names) else []:
        label = f"{size} msgs: CPU/req workers=2 / repair_on (bar 0.9-1.1x)"
        result[label] = ratio(of(size, "workers=2", "cpu"), of(size, "repair_on", "cpu"))
    for size in sizes if {"litellm", "repair_on"} <= set(names) else []:
        label = f"{size} msgs: added p50 litellm / repair_on (bar >= 25x)"
        result[label] = ratio(of(size, "litellm", "added p50"), of(size, "repair_on", "added p50"))
    return result


async def one_run(setup: Setup) -> tuple[list[str], Numbers]:
    """Fresh processes and conversation ids, every size measured; the targets' names and the run's numbers."""
    with tempfile.TemporaryDirectory(prefix="turn-cost-") as folder:
        targets, commands = plan(setup, Path(folder))
        with processes(commands) as pids:
            for target in targets:
                await wait_ready(target.ready, deadline=180.0 if target.name == "litellm" else 30.0)
            run: Numbers = {}
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as client:
                for size in setup.sizes:
                    print(f"  measuring {size} messages", flush=True)
                    run |= await measure(client, targets, pids, setup, size, uuid.uuid4().hex)
    names = [t.name for t in targets]
    return names, run | ratios(run, setup.sizes, names)


def report(runs: list[Numbers], sizes: list[int], names: list[str], heading: str) -> None:
    """A table per size, a row per target, then the ratios; over several runs, each number's mean (min-max)."""

    def cell(key: str) -> str:
        values = [run[key] for run in runs]
        spread = f" ({min(values):.2f}-{max(values):.2f})" if len(values) > 1 else ""
        return f"{statistics.fmean(values):.2f}{spread}"

    width = 12 if len(runs) == 1 else 24
    for size in sizes:
        print(f"\n{size} messages, {heading}; one orjson.loads of the largest body: {cell(f'{size} loads')} ms")
        print(f"  {'target':<20}" + "".join(f"{title:>{width}}" for title in COLUMNS.values()))
        for name in names:
            print(f"  {name:<20}" + "".join(f"{cell(f'{size} {name} {metric}'):>{width}}" for metric in COLUMNS))
    print("  (CPU for direct: the upstream's, per request it served)\n\nratios")
    for label in [key for key in runs[0] if ": " in key]:
        print(f"  {label}: {cell(label)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="50,600", help="transcript sizes in messages, even (default 50,600)")
    parser.add_argument("--conversations", type=int, default=30)
    parser.add_argument("--requests", type=int, default=300, help="timed requests per size per target")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--stream", action="store_true", help="streaming request bodies")
    parser.add_argument("--only", help="comma-separated targets to measure besides direct, relay and baselines")
    parser.add_argument("--baseline", type=Path, action="append", default=[], help="another checkout (repeatable)")
    parser.add_argument("--litellm", action="store_true", help="also LiteLLM's proxy (its venv made if missing)")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    if any(size < 2 or size % 2 for size in sizes) or min(args.conversations, args.requests, args.runs) < 1:
        parser.error("sizes must be even and at least 2; conversations, requests and runs at least 1")
    only = set(args.only.split(",")) if args.only else None
    setup = Setup(sizes, args.conversations, args.requests, args.stream, args.baseline, only, args.litellm)
    mode = f"{args.requests} timed requests per target, {'' if args.stream else 'non-'}streaming"
    runs: list[Numbers] = []
    for index in range(args.runs):
        print(f"\n=== run {index + 1} of {args.runs}", flush=True)
        names, run = asyncio.run(one_run(setup))
        report([run], sizes, names, mode)
        runs.append(run)
    if args.runs > 1:
        print(f"\n=== over {args.runs} runs: mean (min-max)")
        report(runs, sizes, names, mode)


if __name__ == "__main__":
    main()
