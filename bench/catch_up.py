"""Does a proxy that reads a conversation at once decide as one that read it request by request?

A replica that never saw a conversation, or a proxy restarted mid-run, folds the whole history of
the next request at once (`engine.state.fold.Caught`). Each corpus run is read both ways on fresh
engines: request by request (as `trajectories.py` replays it), and its last request alone. Printed
per pattern: trips only the at-once read made, and trips only the request-by-request read made,
each counted as (pattern, turn). Some difference is expected: agents that cut old outputs from
their history (SWE-agent 0.x) send a last request that no longer says what the earlier ones did,
and a conversation keeps its last trips only (`TRIPS_KEPT`). A pattern with many at-once-only
trips is a reading that depends on where it began (found this way: `transcript._before`, and
SWE-agent 0.x's cut observations, 378 `format_error_loop` trips made only at once).

Run: python bench/catch_up.py [--part tune|test|all] [--sources a,b]   (tune: about 4 minutes on 2 cores)
It prints counts only, never a run's text: the test part may be measured with it.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from trajectories import PARTS, Run, load_runs, policy_for

from proxy.dialects import CHAT, plan_offline
from proxy.engine.core import Engine
from proxy.settings.policy import Policy


def _body(run: Run, index: int) -> bytes:
    body: dict[str, object] = {"model": run.model, "messages": run.messages(index)}
    if run.tools:
        body["tools"] = run.tools
    return orjson.dumps(body)


def both_ways(run: Run, policy: Policy) -> tuple[set[tuple[str, int]], set[tuple[str, int]]]:
    """(pattern, turn) of every trip read request by request, and of those the last request read
    at once keeps."""
    engine = Engine.of(policy)
    stepwise: set[tuple[str, int]] = set()
    for index in range(len(run.requests)):
        planned = plan_offline(engine, CHAT, _body(run, index), {})
        if planned is not None:
            stepwise |= {(t.pattern.name, t.turn) for t in planned.decision.new_trips}
    planned = plan_offline(Engine.of(policy), CHAT, _body(run, len(run.requests) - 1), {})
    at_once = {(t.pattern.name, t.turn) for t in planned.decision.state.trips} if planned is not None else set()
    return stepwise, at_once


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=(*PARTS, "all"), default="tune")
    parser.add_argument("--sources", help="comma-separated source ids (default: all)")
    args = parser.parse_args(argv)
    sources = set(args.sources.split(",")) if args.sources else None
    cache: dict[str, Policy] = {}
    only_at_once: Counter[str] = Counter()
    only_stepwise: Counter[str] = Counter()
    runs = 0
    for run in load_runs(sources=sources):
        if args.part not in ("all", run.part) or not run.requests:
            continue
        runs += 1
        stepwise, at_once = both_ways(run, policy_for(run, cache))
        only_at_once.update(pattern for pattern, _turn in at_once - stepwise)
        only_stepwise.update(pattern for pattern, _turn in stepwise - at_once)
    print(f"{args.part}: {runs} runs, each read request by request and its last request at once")
    for pattern in sorted(set(only_at_once) | set(only_stepwise)):
        print(
            f"  {pattern:24} only at once {only_at_once[pattern]:5}   only request by request {only_stepwise[pattern]:5}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
