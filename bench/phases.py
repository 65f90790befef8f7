"""Where the analysis of one proxied request goes, phase by phase.

The workload of `proxy_bench.py`'s measured request: a conversation whose earlier turns are
folded already (its two previous requests went through first), now sending one more turn (a
failing test run with a few KB of output), its earlier instructions re-placed. For each of
`--conversations` conversations this times, without a profiler: parse (the body's JSON and the
dialect's reading of it), request (whose conversation and task), fold (the new turn into the
cached state), plan (the decision) and write (the body to send, spliced). Prints the mean of
each in microseconds, and a cold request (a state folded from the whole transcript) for scale.

Run: python bench/phases.py [--conversations N] [--turns T]
"""

from __future__ import annotations

import argparse
import time
import uuid

from workload import request_body, transcript

from proxy.dialects import CHAT, Planned, SpanMemory, parse, plan_offline
from proxy.engine.core import Engine
from proxy.settings.policy import default_policy

PHASES = ("parse", "request", "fold", "plan", "write")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=24)
    args = parser.parse_args()
    messages = transcript(args.turns, stuck_runs=4)
    earlier = (request_body(messages[:-4]), request_body(messages[:-2]))
    body = request_body(messages)
    engine = Engine.of(default_policy())
    memory = SpanMemory()
    conversations = [uuid.uuid4().hex for _ in range(args.conversations)]
    for conversation in conversations:
        for sent in earlier:
            plan_offline(engine, CHAT, sent, {"X-Repair-Conversation": conversation}, memory=memory)
    spent = dict.fromkeys(PHASES, 0)
    clock = time.perf_counter_ns
    for conversation in conversations:
        headers = {"X-Repair-Conversation": conversation}
        t0 = clock()
        incoming = parse(CHAT, body)
        assert incoming is not None
        t1 = clock()
        request = engine.request(incoming.translation, headers)
        t2 = clock()
        folded = engine.fold(request)
        t3 = clock()
        decision = engine.plan(folded)
        t4 = clock()
        Planned.of(incoming, decision, memory)
        t5 = clock()
        for phase, spent_ns in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4), strict=True):
            spent[phase] += spent_ns
    count = len(conversations)
    means = {phase: spent[phase] / count / 1000 for phase in PHASES}
    print(f"{len(body) / 1024:.0f} KiB body, {len(messages)} messages, one new turn; mean us per request:")
    print("  " + "  ".join(f"{phase} {us:.0f}" for phase, us in means.items()) + f"  total {sum(means.values()):.0f}")
    start = clock()
    cold = 200
    for n in range(cold):
        plan_offline(engine, CHAT, body, {"X-Repair-Conversation": f"cold-{n}"}, memory=SpanMemory())
    print(
        f"  cold (the whole transcript folded, as on a replica that never saw it): {(clock() - start) / cold / 1000:.0f} us"
    )


if __name__ == "__main__":
    main()
