"""Where two arms' runs of one seed part, and who parted them: the proxy or the sampler.

A recovery-bench record (`bench/recovery.py --out`) and its tap folder (`--tap`: one file per
arm, `<arm>.jsonl`, plain or gzipped). For each repository and seed that both arms ran, the
arms' exchanges with the model are read side by side in order, each request's tail and reply,
until the first that differs. Then:

- `proxy`: the requests differ (the proxy said something else, or the agent's tree differs
  because of an earlier step of the proxy's): the arms' difference from here is the proxy's;
- `sampler`: the requests are equal and the replies are not: the model answered the same
  prompt two ways, so what follows is the sampler's, not the proxy's;
- `same`: the two runs are equal, exchange for exchange. Where one is the other and more, the
  proxy parted them: given the same replies the agent does the same, so the longer run went on
  because its proxy asked the model again (a gate, the block rung) where the other passed the
  reply on, on the last turn (countdown seed 3, twenty-seventh run: the re-ask was answered
  right).

The run's own path, the tool-call ids the proxy mints, pytest's durations and objects'
addresses are set aside when comparing (records before `tiny_agent.steady` carried them; the
path held a nonce before 74a4e9a). A comparison of arms is a paired one only on pairs the
proxy parted: the twenty-fifth run's pairs were all parted by the sampler.

    python bench/parted.py bench/records/test-part/twenty-fifth.jsonl bench/records/test-part/twenty-fifth-tap
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

from regrade import outcome
from tiny_agent import steady

_NAMES = re.compile(r"bench-runs/[\w.-]+/[\w.-]+|call_rp\w+|call_\w{16,}")
"""The run's folder and the tool-call ids the proxy mints (the output's own noise is `steady`'s)."""


class Parting(NamedTuple):
    repo: str
    seed: int
    at: int
    """The index of the first exchange that differs (the shorter run's length when none does)."""
    by: str
    """`proxy`, `sampler` or `same`."""
    solved: tuple[bool, bool]
    said: tuple[str, str] = ("", "")
    """Where the proxy parted them: the last message of each arm's request there."""


def _canon(value: Any) -> str:
    return _NAMES.sub("", steady(json.dumps(value, sort_keys=True)))


def parting(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> tuple[int, str]:
    """The first exchange of two runs' taps that differs, and what differs in it."""
    for at, (a, b) in enumerate(zip(first, second, strict=False)):
        if _canon(a.get("request")) != _canon(b.get("request")):
            return at, "proxy"
        if _canon(a.get("reply")) != _canon(b.get("reply")):
            return at, "sampler"
    if len(first) != len(second):
        # equal so far, and one went on: its proxy asked again where the other passed the reply on
        return min(len(first), len(second)), "proxy"
    return len(first), "same"


def _tap(folder: Path, arm: str) -> list[dict[str, Any]]:
    plain, packed = folder / f"{arm}.jsonl", folder / f"{arm}.jsonl.gz"
    text = plain.read_text() if plain.exists() else gzip.decompress(packed.read_bytes()).decode()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _said(run: list[dict[str, Any]], at: int) -> str:
    """The last message of the run's request at exchange `at`."""
    if at >= len(run):
        return "(the run had ended)"
    tail = (run[at].get("request") or {}).get("tail") or [{}]
    content = tail[-1].get("content")
    return content if isinstance(content, str) else json.dumps(tail[-1])


def partings(record: Path, taps: Path, arms: tuple[str, str]) -> list[Parting]:
    rows = [json.loads(line) for line in record.read_text().splitlines() if line.strip()]
    runs = {(r["arm"], r["repo"], r["seed"]): r for r in rows if "arm" in r}
    tapped = {arm: _tap(taps, arm) for arm in arms}
    found = []
    for (arm, repo, seed), run in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][2])):
        other = runs.get((arms[1], repo, seed))
        if arm != arms[0] or other is None or run.get("tap") is None or other.get("tap") is None:
            continue
        (a0, a1), (b0, b1) = run["tap"], other["tap"]
        first, second = tapped[arms[0]][a0:a1], tapped[arms[1]][b0:b1]
        at, by = parting(first, second)
        said = (_said(first, at), _said(second, at)) if by == "proxy" else ("", "")
        found.append(Parting(repo, seed, at, by, (outcome(run) == "solved", outcome(other) == "solved"), said))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("record", type=Path)
    parser.add_argument("taps", type=Path)
    parser.add_argument("--arms", default="noblock,full", help="the two arms, as recovery.py names them")
    parser.add_argument(
        "--said", action="store_true", help="where the proxy parted two runs, what each arm's request ended with"
    )
    args = parser.parse_args()
    arms = tuple(args.arms.split(","))
    assert len(arms) == 2, "two arms"
    found = partings(args.record, args.taps, arms)  # type: ignore[arg-type]
    print(f"{'repo':<10} seed  parted at  by        right ({arms[0]}, {arms[1]})")
    for p in found:
        print(f"{p.repo:<10} {p.seed:>4}  {p.at:>9}  {p.by:<8}  {p.solved[0]!s:<5} {p.solved[1]!s}")
        if args.said and p.by == "proxy":
            for arm, text in zip(arms, p.said, strict=True):
                print(f"    {arm}: {text[-400:]!r}")
    by = Counter(p.by for p in found)
    differ = Counter(p.by for p in found if p.solved[0] != p.solved[1])
    print(
        f"\n{len(found)} pairs: parted by the proxy {by['proxy']}, by the sampler {by['sampler']}, not parted {by['same']}; "
        f"of the {sum(differ.values())} pairs whose outcomes differ, parted by the proxy {differ['proxy']}, by the sampler {differ['sampler']}"
    )


if __name__ == "__main__":
    main()
