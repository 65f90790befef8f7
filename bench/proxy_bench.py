"""Proxy overhead, measured side by side in one run.

Targets, each its own process(es) on loopback in front of the same instant upstream:
  direct        the upstream itself
  minimal       bench/minimal_relay.py, the floor of what a Python aiohttp hop costs
  repair_off    repair-proxy --no-repair --workers 1 (byte-transparent)
  repair_on     repair-proxy --workers 1 with the default policy, as agents use it: each measured
                request is the next request of its own conversation (the proxy has seen the
                transcript up to the previous turn), so it folds one new turn, a failing
                test run with its multi-KB output, and re-inserts the nudges made so far
  workers=2     repair-proxy --workers 2: two processes on one port, the kernel spreading
                connections between them
  replicas=2    two repair-proxy processes (one worker each) that the client alternates
                between, as a Kubernetes Service (kube-proxy, in the kernel) spreads
                connections: a conversation's requests alternate, so every measured request
                lands on the replica that did not see the previous turn (it folds two)

Workload: an agent transcript of 50 messages by default (`--turns`) (tool calls, multi-KB outputs), non-streaming and
streaming. Prints added latency p50/p99 over direct, time to first byte, requests/s at a fixed
concurrency, idle RSS, and the ratios the targets are stated in. On a 2-core machine the load
generator and the upstream share the cores with the proxy: scaling with workers is bounded by
what is left to them.

  repair_on@DIR   (with --baseline DIR, repeatable) the same, run from another checkout of the project
                (say, `git worktree add /tmp/base <commit>`): a change measured against its
                baseline in one run, on the same machine at the same time

Run: python bench/proxy_bench.py [--requests N] [--concurrency C] [--baseline DIR]... [--only NAMES] [--turns T]
                                 [--proxy-config FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
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


Command = tuple[list[str], dict[str, str]]
"""argv and extra environment of one process."""


@dataclass(frozen=True)
class Target:
    name: str
    urls: tuple[str, ...]
    """Base URLs; with several, each conversation's requests alternate between them."""
    warm: bool
    """Conversations are primed with their earlier turns, as an agent sends them."""
    processes: tuple[str, ...] = ()
    """The processes serving it (for idle RSS)."""


@contextmanager
def processes(commands: dict[str, Command]) -> Iterator[dict[str, int]]:
    """Each name's (argv, extra environment) as a process, stopped on exit; a PYTHONPATH in the
    extra environment is also the process's working directory (`python -m` looks there first).
    Yields each name's pid."""
    env = {**os.environ, "REPAIR_PROXY_VERDICTS": ""}  # no durable memory: nothing written by a benchmark
    procs = {
        name: subprocess.Popen(
            cmd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**env, **extra},
            cwd=extra.get("PYTHONPATH"),
        )
        for name, (cmd, extra) in commands.items()
    }
    try:
        yield {name: proc.pid for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            proc.terminate()
        for proc in procs.values():
            proc.wait(timeout=40)


def _over_tree(pid: int, name: str, read: Callable[[str], float]) -> float:
    """`read` of /proc/<pid>/<name>, summed over a process and its children (a supervisor's
    workers); a process gone meanwhile counts nothing."""
    total = 0.0
    for one_pid in [pid, *_children(pid)]:
        try:
            text = Path(f"/proc/{one_pid}/{name}").read_text()
        except OSError:
            continue
        total += read(text)
    return total


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children, in MB."""
    return _over_tree(pid, "status", lambda status: int(status.split("VmRSS:")[1].split()[0]) / 1024)


def cpu_seconds(pid: int) -> float:
    """CPU time (user and system) a process and its children used so far."""
    tick = os.sysconf("SC_CLK_TCK")

    def used(stat: str) -> float:
        fields = stat.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick  # utime, stime

    return _over_tree(pid, "stat", used)


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass(frozen=True)
class Workload:
    body: bytes
    history: tuple[bytes, ...]
    """The same conversation's earlier requests (two turns back, then one): sent untimed first,
    in order, where the target is warm."""


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


def _url(target: Target, position: int) -> str:
    """Where a conversation's request at `position` (0: its first) goes: replicas alternate."""
    return target.urls[position % len(target.urls)] + "/chat/completions"


async def latency(target: Target, work: Workload, count: int) -> tuple[list[float], list[float]]:
    totals, firsts = [], []
    conversations: list[str | None] = [uuid.uuid4().hex for _ in range(count)] if target.warm else [None] * count
    async with aiohttp.ClientSession() as client:
        for conversation in conversations:
            if conversation is not None:
                for position, earlier in enumerate(work.history):
                    await one(client, _url(target, position), earlier, conversation)
        for _ in range(5):
            await one(client, _url(target, 0), work.body, None)
        for conversation in conversations:
            total, first = await one(client, _url(target, len(work.history)), work.body, conversation)
            totals.append(total)
            firsts.append(first)
    return totals, firsts


CpuClock = Callable[[], tuple[float, float]]
"""CPU seconds used so far: (the target's processes, the load generator and the upstream)."""


async def throughput(
    target: Target, work: Workload, count: int, concurrency: int, cpu: CpuClock
) -> tuple[float, tuple[float, float]]:
    """Requests per second at `concurrency`, and the CPU seconds (target, rest) the timed requests
    took; warm conversations are primed before the clock starts."""
    ids = [uuid.uuid4().hex for _ in range(count)]
    headers = {"Content-Type": "application/json"}

    async def send(client: aiohttp.ClientSession, url: str, body: bytes, conversation: str) -> None:
        extra = {"X-Repair-Conversation": conversation} if target.warm else {}
        async with client.post(url, data=body, headers={**headers, **extra}) as response:
            await response.read()
            assert response.status == 200, response.status

    async def drain(client: aiohttp.ClientSession, position: int, body: bytes) -> None:
        queue = list(ids)

        async def worker() -> None:
            while queue:
                await send(client, _url(target, position), body, queue.pop())

        await asyncio.gather(*(worker() for _ in range(concurrency)))

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as client:
        if target.warm:
            for position, earlier in enumerate(work.history):
                await drain(client, position, earlier)
        cpu_before = cpu()
        start = time.perf_counter()
        await drain(client, len(work.history), work.body)
        elapsed = time.perf_counter() - start
        cpu_after = cpu()
        return count / elapsed, (cpu_after[0] - cpu_before[0], cpu_after[1] - cpu_before[1])


def _supports_workers(checkout: Path) -> bool:
    main = checkout / "proxy" / "cli" / "main.py"  # before the layered package, there was no cli/ folder
    return main.exists() and "--workers" in main.read_text()


def plan(
    upstream_port: int, baselines: list[Path], only: set[str] | None, config: Path | None = None
) -> tuple[list[Target], dict[str, Command]]:
    """The targets to measure and the processes they need (each on a port of its own)."""
    upstream = f"http://127.0.0.1:{upstream_port}/v1"
    py = sys.executable
    ports: dict[str, int] = {}

    def at(process: str) -> int:
        return ports.setdefault(process, free_port())

    def serve(process: str, *flags: str, env: dict[str, str] | None = None) -> dict[str, Command]:
        argv = [py, "-m", "proxy", "serve", "--upstream", upstream, "--port", str(at(process)), *flags]
        if config is not None:
            argv += ["--config", str(config.resolve())]
        return {process: (argv, env or {})}

    single = ("--workers", "1")
    wanted: list[tuple[str, bool, dict[str, Command]]] = [
        ("minimal", False, {"minimal": ([py, str(HERE / "minimal_relay.py"), str(at("minimal")), upstream], {})}),
        ("repair_off", False, serve("repair_off", "--no-repair", *single)),
        ("repair_on", True, serve("repair_on", *single)),
        ("workers=2", True, serve("workers=2", "--workers", "2")),
        ("replicas=2", True, serve("replica-a", *single) | serve("replica-b", *single)),
    ]
    for baseline in baselines:  # the other checkout's package first on the path, run from there
        flags = single if _supports_workers(baseline) else ()
        name = f"repair_on@{baseline.name}"
        wanted.append((name, True, serve(name, *flags, env={"PYTHONPATH": str(baseline.resolve())})))
    targets = [Target("direct", (upstream,), False)]
    commands: dict[str, Command] = {}
    for name, warm, needs in wanted:
        if only and name not in only | {"minimal"}:
            continue
        urls = tuple(f"http://127.0.0.1:{at(process)}/v1" for process in needs)
        targets.append(Target(name, urls, warm, tuple(needs)))
        commands.update(needs)
    return targets, commands


async def run(
    requests: int, concurrency: int, baselines: list[Path], only: set[str] | None, turns: int, config: Path | None
) -> None:
    upstream_port = free_port()
    targets, commands = plan(upstream_port, baselines, only, config)
    commands = {"upstream": ([sys.executable, str(HERE / "fast_upstream.py"), str(upstream_port)], {}), **commands}
    messages = transcript(turns, stuck_runs=4)  # stuck 4 runs at a time: nudges, never a halt

    def workload(stream: bool) -> Workload:
        earlier = (request_body(messages[:-4], stream=stream), request_body(messages[:-2], stream=stream))
        return Workload(request_body(messages, stream=stream), earlier)

    bodies = {"non-streaming": workload(False), "streaming": workload(True)}
    print(
        f"workload: {len(messages)} messages, {len(bodies['non-streaming'].body) / 1024:.0f} KiB per request; "
        f"{requests} sequential requests per target, throughput at concurrency {concurrency}"
    )
    with processes(commands) as pids:
        for target in targets:
            for url in target.urls:
                await wait_ready(url + "/models")
        await asyncio.sleep(1.0)
        idle = {t.name: sum(rss_mb(pids[p]) for p in t.processes) for t in targets}
        for mode, body in bodies.items():
            report(mode, await measure(targets, body, requests, concurrency, pids), idle)


async def measure(
    targets: list[Target], work: Workload, requests: int, concurrency: int, pids: dict[str, int]
) -> dict[str, dict[str, float]]:
    # interleave targets round by round so machine noise hits all of them alike
    samples: dict[str, tuple[list[float], list[float]]] = {t.name: ([], []) for t in targets}
    for _round in range(5):
        for target in targets:
            totals, firsts = await latency(target, work, requests // 5)
            samples[target.name][0].extend(totals)
            samples[target.name][1].extend(firsts)
    stats: dict[str, dict[str, float]] = {}
    for target in targets:
        totals, firsts = samples[target.name]
        served_by = [pids[p] for p in target.processes]

        def cpu(served_by: list[int] = served_by) -> tuple[float, float]:
            return sum(cpu_seconds(pid) for pid in served_by), cpu_seconds(pids["upstream"]) + own_cpu_seconds()

        rps, (cpu_target, cpu_rest) = await throughput(target, work, requests, concurrency, cpu)
        stats[target.name] = {
            "p50": statistics.median(totals) * 1000,
            "p99": percentile(totals, 0.99) * 1000,
            "ttfb": statistics.median(firsts) * 1000,
            "rps": rps,
            # CPU per request in the throughput run (ms): the target's processes, and the rest
            # (this load generator and the upstream, on the same cores)
            "cpu": cpu_target / requests * 1000,
            "cpu_rest": cpu_rest / requests * 1000,
        }
    return stats


def ceiling(one: dict[str, float], cores: int, workers: int) -> float:
    """The most `workers` processes can multiply one worker's throughput here: the target's CPU
    per request spreads over them, the load generator's and the upstream's does not shrink,
    and all of it shares `cores` (an upper bound: it assumes a perfectly even spread)."""
    proxy, rest = one["cpu"], one["cpu_rest"]
    if proxy <= 0:
        return float("nan")
    alone = min(1 / proxy, cores / (proxy + rest))  # one worker: one core, or the machine
    spread = min(workers / proxy, cores / (proxy + rest))
    return spread / alone


def report(mode: str, stats: dict[str, dict[str, float]], idle: dict[str, float]) -> None:
    direct = stats["direct"]
    print(f"\n{mode}")
    print(
        f"  {'target':<15} {'p50 ms':>8} {'p99 ms':>8} {'added p50':>10} {'added p99':>10} "
        f"{'ttfb ms':>8} {'req/s':>8} {'vs direct':>10} {'idle RSS':>9}"
    )
    for name, s in stats.items():
        rss = f"{idle[name]:.0f} MB" if idle.get(name) else ""
        print(
            f"  {name:<15} {s['p50']:8.2f} {s['p99']:8.2f} {s['p50'] - direct['p50']:10.2f} "
            f"{s['p99'] - direct['p99']:10.2f} {s['ttfb']:8.2f} {s['rps']:8.0f} {s['rps'] / direct['rps']:9.0%} {rss:>9}"
        )
    floor50 = stats["minimal"]["p50"] - direct["p50"]
    floor99 = stats["minimal"]["p99"] - direct["p99"]
    for name in [n for n in stats if n not in ("direct", "minimal")]:
        added50 = stats[name]["p50"] - direct["p50"]
        added99 = stats[name]["p99"] - direct["p99"]
        print(
            f"  {name}: added p50 {added50 / floor50:.2f}x the minimal relay's (bar 1.25x), "
            f"added p99 {added99 / floor99:.2f}x (bar 1.5x); throughput {stats[name]['rps'] / direct['rps']:.0%} "
            "of direct (bar 60%)"
        )
    cores = os.cpu_count() or 1
    for name in [n for n in stats if n != "direct"]:
        s = stats[name]
        print(
            f"  {name}: CPU per request {s['cpu']:.2f} ms in the target, {s['cpu_rest']:.2f} ms in load generator and upstream"
        )
    for name in ("workers=2", "replicas=2"):
        if name in stats and "repair_on" in stats:
            print(
                f"  {name}: throughput {stats[name]['rps'] / stats['repair_on']['rps']:.2f}x one worker's (bar 1.7x; "
                f"at most {ceiling(stats['repair_on'], cores, 2):.2f}x on this machine's {cores} cores, from the CPU "
                "per request above)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--baseline",
        type=Path,
        action="append",
        default=[],
        help="another checkout of the project, measured beside this one as repair_on@<its folder name> (repeatable)",
    )
    parser.add_argument("--only", help="comma-separated targets to measure besides direct and minimal")
    parser.add_argument("--turns", type=int, default=24, help="agent turns in the transcript (24: 50 messages, 59 KiB)")
    parser.add_argument("--proxy-config", type=Path, help="a config TOML every repair-proxy target is started with")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None
    asyncio.run(run(args.requests, args.concurrency, args.baseline, only, args.turns, args.proxy_config))


if __name__ == "__main__":
    main()
