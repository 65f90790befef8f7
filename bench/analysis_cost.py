"""Analysis cost per request as a conversation grows.

A 500-turn transcript of about 5 MB is sent turn by turn, as an agent sends it: request k
carries turns 1..k. The run gets stuck on one failing test for 8 test runs at a time, so
nudges are placed (and re-placed in every later request), force and halt fire.

For each request this measures the engine's whole analysis (parse, fold of what is new,
plan, rewrite) and, for scale, one `orjson.loads` of the same body. The fold is incremental,
so the analysis must not grow with the turns already folded: the target is at most 2x one
`orjson.loads` of the body. Both are timed the same way: best of 3, after a garbage
collection, each repeat of the analysis starting from the same cached state. Also shown:
the cold cost (a replica with no cached state folds the whole transcript once).

Run: python bench/analysis_cost.py [--turns 500] [--scale 5]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import orjson
from workload import request_body, transcript

from proxy.dialects import CHAT, Planned, plan_offline
from proxy.engine.core import Engine
from proxy.engine.state.conversation import ConversationState
from proxy.settings.policy import default_policy


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
    engine = Engine.of(default_policy())
    headers = {"X-Repair-Conversation": "analysis-cost"}
    key = ("default", "analysis-cost")
    rows = []
    for k in range(1, args.turns + 1):
        body = request_body(messages[: 2 + 2 * k])
        before = engine.cache.get(key)
        analyses: list[object] = []

        def analyse(
            body: bytes = body, before: ConversationState | None = before, analyses: list[object] = analyses
        ) -> None:
            # each repeat starts from the state the previous request left, so it does the same work
            if before is None:
                engine.cache.pop(key)
            else:
                engine.cache.put(key, before)
            analyses.append(plan_offline(engine, CHAT, body, headers))

        gc.collect()
        analyse_s = best_of(analyse)
        gc.collect()
        loads_s = best_of(lambda body=body: orjson.loads(body))
        planned = analyses[-1]
        assert isinstance(planned, Planned)
        rows.append((k, len(body), analyse_s, loads_s, planned.decision.edit is not None, len(planned.decision.placed)))
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
    cold = Engine.of(default_policy())
    body = request_body(messages)
    start = time.perf_counter()
    plan_offline(cold, CHAT, body, headers)
    print(
        f"cold fold of the whole {args.turns}-turn transcript: {(time.perf_counter() - start) * 1e3:.1f} ms "
        f"(one orjson.loads: {best_of(lambda: orjson.loads(body)) * 1e3:.1f} ms)"
    )


if __name__ == "__main__":
    main()
