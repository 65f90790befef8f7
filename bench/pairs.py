"""Block on against block off, per seed, over recovery-bench records: the README's pairs.

Each file is one invocation of `bench/recovery.py --arms noblock,full ...` (its `--out`). A pair
is one seed of one invocation where both arms ran the same repositories and styles; for each,
the wasted turns and the re-runs of an unchanged failing check, off and on, and their change.
Then, over every pair of every file: the mean and range of those changes, and the totals of
solved runs (right: the repository's own tests and its hidden checks, `regrade.outcome`), gamed
runs (the tests, not the checks), ungraded runs and edits that applied. Last, solved runs per invocation in each arm, counted on
the repositories some run of some file solved (the issue's "repositories the model can solve at
all"), with the mean of each arm and how many invocations solved more with block on, or fewer. The records of the README's paired invocations are kept in
`bench/records/`:

    python bench/pairs.py bench/records/*.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from regrade import outcome
from tiny_agent import is_edit


def solved(row: dict[str, Any]) -> bool:
    """The run ended right (`regrade.outcome`: its own tests and its hidden checks pass), and no
    edit of a test file applied on the way: records written before the bench graded runs on their
    repository's own tests counted a test changed to pass (`tiny_agent.tests_pass`)."""
    changed = any(
        is_edit(name, args) and t.get("waste") != "unapplied" and "tests/" in json.dumps(args)
        for t in row["run"]["turns"]
        for name, args in t.get("calls") or []
    )
    return outcome(row) == "solved" and not changed


def runs_in(path: Path) -> list[dict[str, Any]]:
    """The runs a record file holds (its first line may be the command and commit, no run)."""
    rows = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return [row for row in rows if "arm" in row]


def per_seed(rows: list[dict[str, Any]]) -> dict[tuple[str, int], Counter[str]]:
    counts: dict[tuple[str, int], Counter[str]] = {}
    for row in rows:
        count = counts.setdefault((row["arm"], row["seed"]), Counter())
        turns = row["run"]["turns"]
        count["runs"] += 1
        count["solved"] += solved(row)
        count["gamed"] += outcome(row) == "gamed"
        count["ungraded"] += outcome(row) == "ungraded"
        count["wasted"] += sum(1 for t in turns if t.get("waste"))
        count["rerun"] += sum(1 for t in turns if t.get("waste") == "rerun")
        count["applied"] += sum(1 for t in turns if any(is_edit(name, args) for name, args in t.get("calls") or []) and t.get("waste") != "unapplied")  # fmt: skip
    return counts


def solvable(files: list[list[dict[str, Any]]]) -> list[str]:
    """The repositories some run solved, in any arm of any invocation."""
    return sorted({row["repo"] for rows in files for row in rows if solved(row)})


def solved_in(rows: list[dict[str, Any]], repos: list[str], seeds: set[int]) -> tuple[int, int]:
    """Runs solved (block off, block on) on `repos`, over the paired `seeds`."""
    kept = [row for row in rows if row["repo"] in repos and row["seed"] in seeds and solved(row)]
    return sum(row["arm"] == "noblock" for row in kept), sum(row["arm"] == "full" for row in kept)


def change(off: int, on: int) -> float | None:
    return (on - off) / off * 100 if off else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("records", nargs="+", type=Path)
    args = parser.parse_args()
    wasted: list[float] = []
    reruns: list[float] = []
    totals: Counter[str] = Counter()
    files = [runs_in(path) for path in args.records]
    repos = solvable(files)
    per_invocation: list[tuple[str, int, int]] = []
    for path, rows in zip(args.records, files, strict=True):
        counts = per_seed(rows)
        paired: set[int] = set()
        for seed in sorted({s for _arm, s in counts}):
            off, on = counts.get(("noblock", seed)), counts.get(("full", seed))
            if off is None or on is None or off["runs"] != on["runs"]:
                continue
            paired.add(seed)
            dw, dr = change(off["wasted"], on["wasted"]), change(off["rerun"], on["rerun"])
            wasted += [dw] if dw is not None else []
            reruns += [dr] if dr is not None else []
            for key in ("solved", "gamed", "ungraded", "applied", "runs"):
                totals[f"off {key}"] += off[key]
                totals[f"on {key}"] += on[key]
            shown = {k: f"{off[k]} -> {on[k]}" for k in ("wasted", "rerun", "applied", "solved", "gamed")}
            rate = {k: "none to cut" if d is None else f"{d:+.0f}%" for k, d in (("wasted", dw), ("rerun", dr))}
            print(
                f"{path.stem} seed {seed}: {off['runs']} runs per arm, wasted {shown['wasted']} ({rate['wasted']}), "
                f"re-runs {shown['rerun']} ({rate['rerun']}), applied {shown['applied']}, solved {shown['solved']}, "
                f"gamed {shown['gamed']}"
            )
        if paired:
            per_invocation.append((path.stem, *solved_in(rows, repos, paired)))
    if wasted:
        print(f"pairs {len(wasted)}: wasted mean {sum(wasted) / len(wasted):+.0f}% ({min(wasted):+.0f}% to {max(wasted):+.0f}%)")  # fmt: skip
    if reruns:
        print(f"re-runs, {len(reruns)} pairs with some to cut: mean {sum(reruns) / len(reruns):+.0f}% ({min(reruns):+.0f}% to {max(reruns):+.0f}%)")  # fmt: skip
    runs = totals["off runs"]
    print(f"solved {totals['off solved']}/{runs} -> {totals['on solved']}/{runs}, gamed {totals['off gamed']} -> {totals['on gamed']}, ungraded {totals['off ungraded']} -> {totals['on ungraded']}, applied {totals['off applied']} -> {totals['on applied']}")  # fmt: skip
    if per_invocation:
        offs, ons = [off for _name, off, _on in per_invocation], [on for _name, _off, on in per_invocation]
        more, fewer = sum(on > off for _n, off, on in per_invocation), sum(on < off for _n, off, on in per_invocation)
        each = ", ".join(f"{name} {off} -> {on}" for name, off, on in per_invocation)
        print(f"solved per invocation on {', '.join(repos) or 'no repository'}: {each}")
        print(
            f"solved per invocation, mean: off {sum(offs) / len(offs):.1f} ({min(offs)} to {max(offs)}), "
            f"on {sum(ons) / len(ons):.1f} ({min(ons)} to {max(ons)}); "
            f"more with block on in {more} of {len(per_invocation)}, fewer in {fewer}"
        )


if __name__ == "__main__":
    main()
