"""Analysis cost per request as a conversation grows.

A 500-turn transcript of about 5 MB is sent turn by turn, as an agent sends it: request k
carries turns 1..k. For each request this measures the engine's whole analysis (parse, fold of
what is new, plan, rewrite) and, for scale, one `orjson.loads` of the same body. The fold is
incremental, so the analysis must not grow with the turns already folded: the target is at
most 2x one `orjson.loads` of the body. Also shown: the cold cost (a replica with no cached
state folds the whole transcript once).

Run: python bench/analysis_cost.py [--turns 500] [--scale 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).parent))
from workload import request_body, transcript

from proxy.cli import build_engine
from proxy.config import Settings


def best_of(fn: object, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--scale", type=int, default=5, help="output size multiplier (5: about 5 MB at 500 turns)")
    args = parser.parse_args()
    messages = transcript(args.turns, scale=args.scale)
    engine = build_engine(Settings())
    headers = {"X-Repair-Conversation": "analysis-cost"}
    rows = []
    for k in range(1, args.turns + 1):
        body = request_body(messages[: 2 + 2 * k])
        start = time.perf_counter()
        analysis = engine.analyse(body, headers)
        analyse_s = time.perf_counter() - start
        loads_s = best_of(lambda body=body: orjson.loads(body))
        assert analysis is not None
        rows.append((k, len(body), analyse_s, loads_s, analysis.rewritten, len(analysis.injected)))
    print(f"{args.turns} turns, final body {rows[-1][1] / 1e6:.1f} MB")
    print(f"{'turn':>5} {'body MB':>8} {'analyse ms':>11} {'loads ms':>9} {'ratio':>6} {'rewritten':>9} {'placed':>6}")
    for k, size, analyse_s, loads_s, rewritten, placed in rows:
        if k in (1, 10, 50, 100, 200, 300, 400, 500) or k == args.turns:
            print(
                f"{k:5d} {size / 1e6:8.2f} {analyse_s * 1e3:11.2f} {loads_s * 1e3:9.2f} {analyse_s / loads_s:6.2f} {rewritten!s:>9} {placed:6d}"
            )
    ratios = [a / loads for _, _, a, loads, _, _ in rows]
    late = ratios[len(ratios) // 2 :]
    print(
        f"ratio analyse/loads: median {statistics.median(ratios):.2f}, p90 {sorted(ratios)[int(0.9 * len(ratios))]:.2f}, "
        f"max {max(ratios):.2f}; second half median {statistics.median(late):.2f} (target <= 2.0)"
    )
    cold = build_engine(Settings())
    body = request_body(messages)
    start = time.perf_counter()
    cold.analyse(body, headers)
    print(
        f"cold fold of the whole {args.turns}-turn transcript: {(time.perf_counter() - start) * 1e3:.1f} ms "
        f"(one orjson.loads: {best_of(lambda: orjson.loads(body)) * 1e3:.1f} ms)"
    )


if __name__ == "__main__":
    main()
