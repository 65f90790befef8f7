"""Tool outputs made to stall a backtracking matcher, analysed side by side with a benign one.

Each request is one chat turn: the agent ran `python -m pytest tests/`, the tool answered with one
output of `--chars` characters (60,000 by default) and the notice OpenHands adds after a failing
command (`[The command completed with exit code 1.]`). The benign output is a pytest report of
the same size; the hostile ones are runs of newlines, spaces, `(`, `[`, `<output>`, `-=`, `1:`,
`a@b:`, OSC escapes, one long word, a `/tmp/` path, a `0x` run, an unclosed `File "` path line,
a deep traceback.

Part one times the analysis (parse, fold, plan: `plan_offline`, no budget) of each in this
process, in the same run: the best of `--repeats`, each on a conversation the engine has not
seen, and prints each one's time over the benign report's. Target: every hostile output within
10 times the benign report and within 500 ms. A run past `--cap` seconds is stopped (a timer
signal) and shown as more than the cap.

Part two starts the proxy (`python -m proxy serve`, one worker) in front of an upstream that
answers at once (`fast_upstream.py`), both on 127.0.0.1, sends each request and, while it is in
flight, asks `/healthz` one request after another; it prints the slowest and the median
`/healthz` answer while the analysis ran. Target: under 100 ms.

Run: python bench/hostile_outputs.py [--chars 60000] [--repeats 3] [--cap 60] [--no-server] [--only NAMES]
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from proxy_bench import free_port, processes, wait_ready

from proxy.dialects import CHAT, plan_offline
from proxy.engine.core import Engine
from proxy.settings.policy import default_policy

HERE = Path(__file__).parent
NOTICE = "\n[The command completed with exit code 1.]"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "execute_bash",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]


def _fill(unit: str, chars: int) -> str:
    return (unit * (chars // len(unit) + 1))[:chars]


def _pytest_report(chars: int) -> str:
    head = "============================= test session starts ==============================\ncollected 1200 items\n\n"
    tail = (
        "=================================== FAILURES ===================================\n"
        "_________________________________ test_add __________________________________\n\n"
        "    def test_add():\n>       assert add(2, 2) == 3\nE       assert 4 == 3\n\n"
        "tests/test_calc.py:12: AssertionError\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/test_calc.py::test_add - assert 4 == 3\n"
        "======================= 1 failed, 1199 passed in 3.21s ========================\n"
    )
    lines = "".join(f"tests/test_mod{i % 40}.py::test_case_{i} PASSED{' ' * 20}[{i % 100:3d}%]\n" for i in range(4000))
    return head + lines[: chars - len(head) - len(tail)] + tail


def _traceback(chars: int) -> str:
    frame = '  File "/workspace/src/calc.py", line 12, in add\n    return add(a, b)\n'
    head = "Traceback (most recent call last):\n"
    tail = "RecursionError: maximum recursion depth exceeded\n"
    return head + frame * ((chars - len(head) - len(tail)) // len(frame)) + tail


SHAPES: dict[str, Callable[[int], str]] = {
    "benign pytest report": _pytest_report,
    "newlines": lambda n: "\n" * n,
    "spaces": lambda n: " " * n,
    "(": lambda n: "(" * n,
    "[": lambda n: "[" * n,
    "<output>": lambda n: _fill("<output>", n),
    "-=": lambda n: _fill("-=", n),
    "1:": lambda n: _fill("1:", n),
    "a@b:": lambda n: _fill("a@b:", n),
    "OSC escapes": lambda n: _fill("\x1b]0;title", n),
    "one long word": lambda n: "a" * n,
    "/tmp/ path": lambda n: "/tmp/" + _fill("pytest-of-agent-", n - 5),
    "0x run": lambda n: _fill("0x", n),
    'unclosed File "': lambda n: '  File "' + _fill("/usr/lib/python3.11/site-packages/", n - 8),
    "deep traceback": _traceback,
}


def request_body(output: str) -> bytes:
    call = {"command": "cd /workspace && python -m pytest tests/"}
    messages = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Make the failing test pass."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "execute_bash", "arguments": orjson.dumps(call).decode()},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": output + NOTICE},
    ]
    return orjson.dumps({"model": "bench", "messages": messages, "tools": TOOLS})


class _Capped(Exception):
    pass


def _stop(_signum: int, _frame: Any) -> None:
    raise _Capped


def analysis_seconds(engine: Engine, body: bytes, cap: float) -> float:
    """One analysis of `body` as a conversation the engine has not seen; infinity past `cap`."""
    headers = {"X-Repair-Conversation": uuid.uuid4().hex}
    previous = signal.signal(signal.SIGALRM, _stop)
    signal.setitimer(signal.ITIMER_REAL, cap)
    started = time.perf_counter()
    try:
        plan_offline(engine, CHAT, body, headers)
        return time.perf_counter() - started
    except _Capped:
        return float("inf")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _ms(seconds: float, cap: float) -> str:
    return f">{cap * 1000:.0f}" if seconds == float("inf") else f"{seconds * 1000:.1f}"


def part_one(bodies: dict[str, bytes], repeats: int, cap: float) -> bool:
    engine = Engine.of(default_policy())
    analysis_seconds(engine, bodies["benign pytest report"], cap)  # warm: imports, memos, the token counter
    times: dict[str, float] = {}
    for name, body in bodies.items():
        runs = [analysis_seconds(engine, body, cap)]
        while len(runs) < repeats and runs[-1] != float("inf"):
            runs.append(analysis_seconds(engine, body, cap))
        times[name] = min(runs)
    benign = times["benign pytest report"]
    print(f"\nanalysis of one request, {len(next(iter(bodies.values()))):,} bytes or so, best of {repeats}")
    print(f"{'output':24} {'ms':>9} {'x benign':>9}  within 10x and 500 ms")
    good = True
    for name, seconds in times.items():
        ratio = seconds / benign
        ok = ratio <= 10 and seconds <= 0.5
        good = good and ok
        print(f"{name:24} {_ms(seconds, cap):>9} {ratio:9.1f}  {'yes' if ok else 'NO'}")
    return good


async def _healthz_while(
    client: aiohttp.ClientSession, base: str, body: bytes, cap: float
) -> tuple[float, list[float]]:
    """The chat request's own time, and each `/healthz` answer's while it was in flight."""
    started = time.perf_counter()
    chat = asyncio.ensure_future(
        client.post(f"{base}/v1/chat/completions", data=body, headers={"Content-Type": "application/json"})
    )
    waits: list[float] = []
    while not chat.done() and time.perf_counter() - started < cap:
        asked = time.perf_counter()
        async with client.get(f"{base}/healthz") as response:
            await response.read()
        waits.append(time.perf_counter() - asked)
        await asyncio.sleep(0.005)
    if not chat.done():
        chat.cancel()
        return float("inf"), waits
    async with await chat as response:
        await response.read()
    return time.perf_counter() - started, waits


async def part_two(bodies: dict[str, bytes], cap: float) -> bool:
    upstream_port, proxy_port = free_port(), free_port()
    py = sys.executable
    upstream = f"http://127.0.0.1:{upstream_port}/v1"
    commands = {
        "upstream": ([py, str(HERE / "fast_upstream.py"), str(upstream_port)], {}),
        "proxy": (
            [py, "-m", "proxy", "serve", "--upstream", upstream, "--port", str(proxy_port), "--workers", "1"],
            {},
        ),
    }
    base = f"http://127.0.0.1:{proxy_port}"
    good = True
    with processes(commands):
        await wait_ready(f"http://127.0.0.1:{upstream_port}/v1/models")
        await wait_ready(f"{base}/healthz")
        timeout = aiohttp.ClientTimeout(total=cap + 30)
        async with aiohttp.ClientSession(timeout=timeout) as client:
            await _healthz_while(client, base, bodies["benign pytest report"], cap)  # warm
            print(f"\n/healthz while each request is in flight (proxy on {base}, one worker)")
            print(f"{'output':24} {'request ms':>11} {'asked':>6} {'healthz p50 ms':>15} {'max ms':>8}  under 100 ms")
            for name, body in bodies.items():
                took, waits = await _healthz_while(client, base, body, cap)
                worst = max(waits, default=0.0)
                ok = worst < 0.1
                good = good and ok
                median = statistics.median(waits) * 1000 if waits else 0.0
                print(
                    f"{name:24} {_ms(took, cap):>11} {len(waits):6d} {median:15.1f} {worst * 1000:8.1f}  {'yes' if ok else 'NO'}"
                )
    return good


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chars", type=int, default=60_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cap", type=float, default=60.0, help="seconds one analysis may run before it is stopped")
    parser.add_argument("--no-server", action="store_true", help="part one only")
    parser.add_argument("--only", help="comma-separated output names (the benign report is always run)")
    args = parser.parse_args()
    wanted = set(args.only.split(",")) if args.only else set(SHAPES)
    bodies = {
        name: request_body(make(args.chars))
        for name, make in SHAPES.items()
        if name in wanted or name == "benign pytest report"
    }
    good = part_one(bodies, args.repeats, args.cap)
    if not args.no_server:
        good = asyncio.run(part_two(bodies, args.cap)) and good
    print("\nall within the targets" if good else "\nsome outside the targets")


if __name__ == "__main__":
    main()
