"""What a client sees a hop add when its conversation grows by one turn (issues 29 and 64).

Each timed request is the next turn of one of many conversations (`--conversations`, 30), at each transcript
size (`--sizes`, 50 and 600 messages): conversation c's k-th timed request carries its transcript (workload.
transcript: an assistant message with one tool call and its result per turn) up to size + 2k messages. Before the
clock starts, every conversation is sent once with its starting transcript, to every target alike: a conversation
first seen long (a restart, another replica, an agent resumed) as a proxy meets it, its time reported apart (`1st
seen`); then, once the proxies are quiet, sent again to the proxies until none is still being read beside the
traffic (`settle`), so that what is timed is an agent's steady state, a conversation growing by a turn. No conversation
header is sent (`--header` sends `X-Repair-Conversation`): the proxy tells conversations apart by their transcripts,
as it does for most agents; the transcripts are fresh per run, load and size (their seeds), so no two share state.

Targets, each its own process(es) on loopback in front of the same instant upstream (bench/fast_upstream.py):
  direct          the upstream itself
  relay           bench/minimal_relay.py, the floor of a Python aiohttp hop
  repair_off      repair-proxy serve --no-repair --workers 1
  repair_on       repair-proxy serve --workers 1, the default policy
  workers=2       repair-proxy serve --workers 2
  repair_on@DIR   (--baseline DIR, repeatable) repair_on from another checkout, run with PYTHONPATH and cwd DIR
  litellm         (--litellm) LiteLLM's proxy (the client matrix's `litellm_proxy` environment: scripts/clients.py
                  installs it), one worker, an OpenAI pass-through with a master key and no database

Interleaved request by request: each step's request goes to every target in turn, in an order shuffled per step
(seeded), one request in flight at a time, so machine noise falls on all alike. The time is the client's: from
before the request is written to after the whole reply is read (aiohttp, one keep-alive connection per target).

Loads (`--loads`, both by default, in one run, each on the same processes): `idle`, and `busy`, with two CPU-bound
processes (a Python busy loop each, started and stopped by this script) holding both cores of a 2-core machine, the
deployment beside a model server. Another engineer's work or a model server may load the machine too: the load
average is printed at the start and end of each load; the interleaved ratios are what load affects alike.

Per load, size and target: p50 and p99 latency; added p50/p99 = the target's p50/p99 minus direct's; CPU per
request = utime+stime of the target's processes and their children over the timed requests, divided by their
number (for direct: the upstream's, per request it served, from all targets). For the proxies, from their own log
(stderr): `analysis_abandoned` for a conversation already seen (the analysis of a conversation's later request
given up) and for a first seen one, and `event_loop_stall`s, over the load's requests; over the timed ones, the
requests sent up unanalysed while their conversation was read beside the traffic (`catching up`), the bodies
parsed whole rather than from their conversation's last parse (`read whole`: a bound too small for the
conversations in turn shows here), and the p50 of the log's `total_ms` and `overhead_ms`, beside what the client
saw. For scale, the median time of one orjson.loads of the largest body of each size. Then the issue's bars, for
repair_on, workers=2 and each repair_on@DIR ("added" as above):
  added p50 / relay's added p50, at the smallest size                           bar <= 1.5x
  (added p50 - relay's added p50) / orjson.loads, at the largest size           bar <= 1x
  p99 / p50 of the latency, at the largest size                                  bar <= 2x
  analysis_abandoned for a conversation already seen; event_loop_stall           bar 0
  litellm's added p50 / repair_on's added p50, each size                         bar >= 25x
With --runs N the whole measurement is repeated with fresh processes and conversations, then each number's mean
and range (min-max) over the runs is printed.

Run: python bench/turn_cost.py [--sizes 50,600] [--loads idle,busy] [--conversations 30] [--requests 300]
                               [--runs N] [--stream] [--header] [--only NAMES] [--baseline DIR]... [--litellm]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import orjson
from proxy_bench import Command, _supports_workers, cpu_seconds, free_port, percentile, wait_ready
from workload import request_body, transcript

HERE = Path(__file__).parent
ROOT = HERE.parent
LITELLM_KEY = "sk-bench-turn-cost"
LOADS = ("idle", "busy")
HOGS = 2
"""CPU-bound processes of the busy load: one per core of a 2-core machine."""
Numbers = dict[str, float]
"""A run's named results (latencies and CPU in ms, counts, ratios), in print order."""


@dataclass(frozen=True)
class Target:
    name: str
    url: str
    """Base URL, ending in /v1."""
    ready: str
    """Answers a GET once the target is up."""
    headers: dict[str, str] = field(default_factory=dict)
    log: Path | None = None
    """Where a repair-proxy target's log (its stderr and stdout) goes."""


@dataclass(frozen=True)
class Setup:
    sizes: list[int]
    loads: list[str]
    conversations: int
    requests: int
    stream: bool
    header: bool
    baselines: list[Path]
    only: set[str] | None
    litellm: bool
    logs: Path | None = None
    """Where the proxies' logs are copied (a folder per run), if anywhere."""


def litellm_cli() -> Path:
    """LiteLLM's CLI, from the client matrix's `litellm_proxy` environment."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import clients  # noqa: PLC0415 (the client matrix's installer, a script beside the package)

    found = clients.executable("litellm_proxy")
    if found is None:
        raise SystemExit("LiteLLM's proxy is not installed: run python scripts/clients.py")
    return Path(found).parent / "litellm"


def litellm(upstream: str, folder: Path) -> tuple[Target, Command]:
    """LiteLLM's proxy as a pass-through to `upstream`, its config (JSON is YAML) in `folder`."""
    port = free_port()
    config = folder / "litellm.yaml"
    model = {"model_name": "bench", "litellm_params": {"model": "openai/bench", "api_base": upstream, "api_key": "x"}}
    config.write_bytes(orjson.dumps({"model_list": [model], "litellm_settings": {"drop_params": True}}))
    argv = [str(litellm_cli()), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    env = {
        "LITELLM_MASTER_KEY": LITELLM_KEY,
        "LITELLM_LOG": "ERROR",
        "LITELLM_TELEMETRY": "False",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no fetch of the cost map at start
        "DISABLE_SCHEMA_UPDATE": "true",
        "PYTHONPATH": str(folder),  # run from there: nothing it writes lands in the checkout
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

    wanted: list[tuple[str, Callable[[int], list[str]], dict[str, str], bool]] = [
        ("relay", lambda port: [py, str(HERE / "minimal_relay.py"), str(port), upstream], {}, False),
        ("repair_off", serve("--no-repair", "--workers", "1"), {}, True),
        ("repair_on", serve("--workers", "1"), {}, True),
        ("workers=2", serve("--workers", "2"), {}, True),
    ]
    for baseline in setup.baselines:
        flags = ("--workers", "1") if _supports_workers(baseline) else ()
        env = {"PYTHONPATH": str(baseline.resolve())}
        wanted.append((f"repair_on@{baseline.name}", serve(*flags), env, True))
    targets = [Target("direct", upstream, upstream + "/models")]
    commands: dict[str, Command] = {"direct": ([py, str(HERE / "fast_upstream.py"), str(upstream_port)], {})}
    for name, argv, env, logged in wanted:
        if setup.only is None or name in setup.only | {"relay"} or name.startswith("repair_on@"):
            port = free_port()
            base = f"http://127.0.0.1:{port}/v1"
            log = folder / f"{name.replace('/', '_')}.log" if logged else None
            targets.append(Target(name, base, base + "/models", log=log))
            commands[name] = (argv(port), env)
    if setup.litellm:
        target, command = litellm(upstream, folder)
        targets.append(target)
        commands[target.name] = command
    return targets, commands


@contextmanager
def processes(commands: dict[str, Command], logs: dict[str, Path]) -> Iterator[dict[str, int]]:
    """Each name's (argv, extra environment) as a process, stopped on exit, its output in its log (if it has one,
    else discarded); a PYTHONPATH in the extra environment is also its working directory. Yields each one's pid."""
    env = {**os.environ, "REPAIR_PROXY_VERDICTS": ""}  # no durable memory: nothing written by a benchmark
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for name, (cmd, extra) in commands.items():
            out = logs[name].open("ab") if name in logs else subprocess.DEVNULL
            procs[name] = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, env={**env, **extra}, cwd=extra.get("PYTHONPATH")
            )
        yield {name: proc.pid for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            proc.terminate()
        for proc in procs.values():
            proc.wait(timeout=40)


@contextmanager
def load(name: str) -> Iterator[None]:
    """`busy`: `HOGS` CPU-bound processes running meanwhile (stopped, by their own ids, on the way out)."""
    hogs = [] if name == "idle" else [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(HOGS)]
    try:
        if hogs:
            time.sleep(1.0)  # the scheduler has them running
        yield
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait(timeout=10)


def uptime() -> str:
    """The load average over 1, 5 and 15 minutes."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


async def send(client: aiohttp.ClientSession, target: Target, body: bytes, conversation: str | None) -> float:
    """One request, its seconds; it must be forwarded and answered with a completion."""
    headers = {"Content-Type": "application/json", **target.headers}
    if conversation is not None:
        headers["X-Repair-Conversation"] = conversation
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


def from_log(log: Path, start: int, timed_from: int) -> Numbers:
    """From a proxy's log, past byte `start`: `abandoned_seen` (analysis_abandoned on a request of a
    conversation that had a request before), `abandoned_first`, `stalls` (event_loop_stall); past byte
    `timed_from` (the timed requests): `catching_up` (requests sent up unanalysed while their conversation
    was read beside the traffic), `read_whole` (bodies parsed whole, not from their conversation's last
    parse; NaN from a proxy whose log does not say) and the p50 of the log's `total_ms` (`log total`) and
    `overhead_ms` (`log overhead`)."""
    counts: Counter[str] = Counter()
    seen: set[str] = set()
    said: dict[str, list[float]] = {"total_ms": [], "overhead_ms": []}
    with log.open("rb") as lines:
        lines.seek(start)
        at = start
        for line in lines:
            timed, at = at >= timed_from, at + len(line)
            if not line.startswith(b"{"):
                continue
            event = orjson.loads(line)
            if event.get("event") == "event_loop_stall":
                counts["stalls"] += 1
            elif event.get("event") == "request" and event.get("path", "").endswith("/chat/completions"):
                conversation, end = event.get("conversation"), event.get("end")
                if end == "analysis_abandoned":
                    counts["abandoned_seen" if conversation in seen else "abandoned_first"] += 1
                if timed:
                    counts["catching_up"] += end == "catching_up"
                    counts["read_whole"] += event.get("read") == "whole"
                    counts["read_said"] += "read" in event
                    for key, values in said.items():
                        values.append(float(event.get(key, math.nan)))
                seen.add(conversation)
    result = {what: float(counts[what]) for what in ("abandoned_seen", "abandoned_first", "catching_up", "stalls")}
    result["read_whole"] = float(counts["read_whole"]) if counts["read_said"] else math.nan
    result["log total"] = statistics.median(said["total_ms"]) if said["total_ms"] else math.nan
    result["log overhead"] = statistics.median(said["overhead_ms"]) if said["overhead_ms"] else math.nan
    return result


def caught_up_lines(log: Path, start: int) -> int:
    """Requests sent up unanalysed while their conversation was read beside the traffic, past byte `start`."""
    with log.open("rb") as lines:
        lines.seek(start)
        return sum(1 for line in lines if b'"end":"catching_up"' in line)


async def quiet(pids: list[int], most: float = 60.0) -> None:
    """Until the processes use under 4% of a core over a quarter of a second (what they read beside the
    traffic is read), at most `most` seconds."""
    until = time.monotonic() + most
    while time.monotonic() < until:
        before = sum(cpu_seconds(pid) for pid in pids)
        await asyncio.sleep(0.25)
        if sum(cpu_seconds(pid) for pid in pids) - before < 0.01:
            return


async def settle(
    client: aiohttp.ClientSession,
    proxies: list[Target],
    pids: dict[str, int],
    primers: list[bytes],
    conversation: Callable[[Target, int], str | None],
) -> None:
    """Every conversation's first request sent again, untimed, to the proxies, once they are quiet, until a
    pass meets none still being read beside the traffic (a worker reads a few at once: the rest start when
    their conversation's next request comes), at most 10 passes."""
    for _ in range(10):
        await quiet([pids[t.name] for t in proxies])
        marks = {t.name: t.log.stat().st_size for t in proxies if t.log is not None}
        for c, primer in enumerate(primers):
            for target in proxies:
                await send(client, target, primer, conversation(target, c))
        if not any(caught_up_lines(t.log, marks[t.name]) for t in proxies if t.log is not None):
            return


async def measure(
    client: aiohttp.ClientSession, targets: list[Target], pids: dict[str, int], setup: Setup, size: int, seed: int
) -> Numbers:
    """One size under the current load: every conversation sent once (timed: first seen), read up by the
    proxies (`settle`), then the timed next turns, interleaved."""
    turns = -(-setup.requests // setup.conversations)
    histories = [transcript((size - 2) // 2 + turns, seed=seed + c, stuck_runs=4) for c in range(setup.conversations)]

    def body(c: int, k: int) -> bytes:
        return request_body(histories[c][: size + 2 * k], stream=setup.stream)

    def conversation(target: Target, c: int) -> str | None:
        return f"turn-cost-{seed}-{target.name}-{c}" if setup.header else None

    proxies = [t for t in targets if t.log is not None]
    logged = {t.name: t.log.stat().st_size for t in proxies if t.log is not None}
    first: dict[str, list[float]] = {t.name: [] for t in targets}
    primers = [body(c, 0) for c in range(setup.conversations)]
    for c, primer in enumerate(primers):
        for target in targets:
            first[target.name].append(await send(client, target, primer, conversation(target, c)))
    await settle(client, proxies, pids, primers, conversation)
    timed_from = {t.name: t.log.stat().st_size for t in proxies if t.log is not None}
    steps = [(k, c) for k in range(1, turns + 1) for c in range(setup.conversations)][: setup.requests]
    rng = random.Random(seed)
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
    await asyncio.sleep(0.3)  # the last request's log line and any stall's are written
    result = numbers(size, seconds, cpu, len(steps), loads_ms(largest))
    direct_first = statistics.median(first["direct"]) * 1000
    for target in targets:
        result[f"{size} {target.name} first p50"] = statistics.median(first[target.name]) * 1000 - direct_first
        result[f"{size} {target.name} first max"] = max(first[target.name]) * 1000 - direct_first
        if target.log is not None:
            said = from_log(target.log, logged[target.name], timed_from[target.name])
            result |= {f"{size} {target.name} {what}": value for what, value in said.items()}
    return result


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


COLUMNS = {
    "p50": "p50 ms",
    "p99": "p99 ms",
    "added p50": "added p50",
    "added p99": "added p99",
    "cpu": "CPU ms/req",
    "log total": "log total",
    "log overhead": "log overh.",
    "first p50": "1st seen p50",
    "first max": "1st seen max",
    "abandoned_seen": "aband. seen",
    "abandoned_first": "aband. 1st",
    "catching_up": "catching up",
    "read_whole": "read whole",
    "stalls": "stalls",
}


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else math.nan


def ratios(run: Numbers, sizes: list[int], names: list[str]) -> Numbers:
    """The issue's bars, each labelled with its bar."""

    def of(size: int, name: str, metric: str) -> float:
        return run[f"{size} {name} {metric}"]

    small, large = min(sizes), max(sizes)
    result: Numbers = {}
    for name in [n for n in names if n in ("repair_on", "workers=2") or n.startswith("repair_on@")]:
        label = f"{small} msgs: added p50 {name} / relay (bar <= 1.5x)"
        result[label] = ratio(of(small, name, "added p50"), of(small, "relay", "added p50"))
        label = f"{large} msgs: (added p50 {name} - relay) / orjson.loads (bar <= 1x)"
        result[label] = ratio(of(large, name, "added p50") - of(large, "relay", "added p50"), run[f"{large} loads"])
        result[f"{large} msgs: p99 / p50 {name} (bar <= 2x)"] = ratio(of(large, name, "p99"), of(large, name, "p50"))
        label = f"all sizes: analysis_abandoned seen, event_loop_stall {name} (bar 0)"
        result[label] = sum(of(size, name, "abandoned_seen") + of(size, name, "stalls") for size in sizes)
    for size in sizes if {"litellm", "repair_on"} <= set(names) else []:
        label = f"{size} msgs: added p50 litellm / repair_on (bar >= 25x)"
        result[label] = ratio(of(size, "litellm", "added p50"), of(size, "repair_on", "added p50"))
    return result


async def one_run(setup: Setup, run_index: int) -> tuple[list[str], dict[str, Numbers]]:
    """Fresh processes, every load and size measured; the targets' names and each load's numbers."""
    with tempfile.TemporaryDirectory(prefix="turn-cost-") as folder:
        targets, commands = plan(setup, Path(folder))
        logs = {t.name: t.log for t in targets if t.log is not None}
        for log in logs.values():
            log.touch()
        by_load: dict[str, Numbers] = {}
        with processes(commands, logs) as pids:
            for target in targets:
                await wait_ready(target.ready, deadline=180.0 if target.name == "litellm" else 30.0)
            timeout = aiohttp.ClientTimeout(total=120)
            async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0)) as client:
                for load_index, name in enumerate(setup.loads):
                    run: Numbers = {}
                    with load(name):
                        print(f"  {name}: load average {uptime()} at the start", flush=True)
                        for size_index, size in enumerate(setup.sizes):
                            print(f"  {name}: measuring {size} messages", flush=True)
                            seed = 100_000 * (run_index + 1) + 10_000 * load_index + 1_000 * size_index
                            run |= await measure(client, targets, pids, setup, size, seed)
                        print(f"  {name}: load average {uptime()} at the end", flush=True)
                    by_load[name] = run
        if setup.logs is not None:
            kept = setup.logs / f"run-{run_index + 1}"
            kept.mkdir(parents=True, exist_ok=True)
            for log in logs.values():
                shutil.copy(log, kept / log.name)
    names = [t.name for t in targets]
    return names, {name: run | ratios(run, setup.sizes, names) for name, run in by_load.items()}


def report(runs: list[Numbers], sizes: list[int], names: list[str], heading: str) -> None:
    """A table per size, a row per target, then the bars; over several runs, each number's mean (min-max)."""

    def cell(key: str) -> str:
        values = [run[key] for run in runs if key in run]
        if not values:
            return "-"
        spread = f" ({min(values):.2f}-{max(values):.2f})" if len(values) > 1 else ""
        return f"{statistics.fmean(values):.2f}{spread}"

    width = 12 if len(runs) == 1 else 24
    for size in sizes:
        print(f"\n{size} messages, {heading}; one orjson.loads of the largest body: {cell(f'{size} loads')} ms")
        print(f"  {'target':<20}" + "".join(f"{title:>{width}}" for title in COLUMNS.values()))
        for name in names:
            print(f"  {name:<20}" + "".join(f"{cell(f'{size} {name} {metric}'):>{width}}" for metric in COLUMNS))
    print("  (CPU for direct: the upstream's, per request it served; log total/overh.: p50 of the proxy's total_ms")
    print("  and overhead_ms for the timed requests; 1st seen: added over direct by each conversation's first request;")
    print("  aband./stalls over all requests; catching up, read whole (parsed whole, not from the conversation's last")
    print("  parse) over the timed ones: from the proxy's log)\n\nbars")
    for label in [key for key in runs[0] if ": " in key]:
        print(f"  {label}: {cell(label)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="50,600", help="transcript sizes in messages, even (default 50,600)")
    parser.add_argument("--loads", default=",".join(LOADS), help="idle, busy or both (default idle,busy)")
    parser.add_argument("--conversations", type=int, default=30)
    parser.add_argument("--requests", type=int, default=300, help="timed requests per size per target")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--stream", action="store_true", help="streaming request bodies")
    parser.add_argument("--header", action="store_true", help="send X-Repair-Conversation")
    parser.add_argument("--only", help="comma-separated targets to measure besides direct, relay and baselines")
    parser.add_argument("--baseline", type=Path, action="append", default=[], help="another checkout (repeatable)")
    parser.add_argument("--litellm", action="store_true", help="also LiteLLM's proxy (scripts/clients.py installs it)")
    parser.add_argument("--logs", type=Path, help="a folder to copy the proxies' logs to, each run's in its own")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    loads = args.loads.split(",")
    if any(size < 2 or size % 2 for size in sizes) or min(args.conversations, args.requests, args.runs) < 1:
        parser.error("sizes must be even and at least 2; conversations, requests and runs at least 1")
    if not loads or any(name not in LOADS for name in loads):
        parser.error(f"loads are among {', '.join(LOADS)}")
    only = set(args.only.split(",")) if args.only else None
    setup = Setup(
        sizes,
        loads,
        args.conversations,
        args.requests,
        args.stream,
        args.header,
        args.baseline,
        only,
        args.litellm,
        args.logs,
    )
    mode = f"{args.requests} timed requests per target, {'' if args.stream else 'non-'}streaming"
    runs: dict[str, list[Numbers]] = {name: [] for name in loads}
    names: list[str] = []
    for index in range(args.runs):
        print(f"\n=== run {index + 1} of {args.runs}", flush=True)
        names, by_load = asyncio.run(one_run(setup, index))
        for name, run in by_load.items():
            report([run], sizes, names, f"{name}, {mode}")
            runs[name].append(run)
    if args.runs > 1:
        for name, over in runs.items():
            print(f"\n=== {name}, over {args.runs} runs: mean (min-max)")
            report(over, sizes, names, f"{name}, {mode}")


if __name__ == "__main__":
    main()
