"""The recovery bench's arms side by side, with each arm's range over seeds: issue 51's table.

Record files of `bench/recovery.py --out`, all at one commit (an invocation may hold a few seeds,
another the next ones: the runs are read as one; files at different commits are refused). Per arm: runs solved in all, and the least and most solved by one seed; wasted turns
(`tiny_agent.WASTE_KINDS`) of all turns; turns with a real call; edits applied / not applied;
runs handed back; and the edits the proxy asked for, with those among them that replace a text
with itself. An edit the proxy asked for is an edit made on a turn whose request carried a new
instruction of ours or whose reply a gate sent back (`trips`, `generations` > 1); a copy is an
editor's `str_replace` whose `new_str` is its `old_str`. Last, the bars of issue 51: defaults
(`full`) solve strictly more than block off (`noblock`), both more than the model alone
(`alone`); wasted turns with the defaults at most half of block off's; copies at most 10% of the
edits asked for.

    python bench/arms.py bench/records/twenty-first*.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from tiny_agent import is_edit


class Arm(NamedTuple):
    runs: int
    solved: int
    per_seed: tuple[int, ...]
    """Runs solved by each seed, in seed order."""
    wasted: int
    turns: int
    acting: int
    applied: int
    unapplied: int
    handed_back: int
    asked: int
    """Edits the proxy asked for."""
    copies: int
    """Of those, edits that replace a text with itself."""


def is_copy(name: str, args: dict[str, Any]) -> bool:
    return name == "str_replace_editor" and args.get("command") == "str_replace" and args.get("new_str") == args.get("old_str")  # fmt: skip


def arm(rows: list[dict[str, Any]]) -> Arm:
    seeds = sorted({row["seed"] for row in rows})
    turns = [t for row in rows for t in row["run"]["turns"]]
    edits = [(t, name, args) for t in turns for name, args in t.get("calls") or [] if is_edit(name, args)]
    asked = [(name, args) for t, name, args in edits if t.get("trips") or t.get("generations", 1) > 1]
    return Arm(
        runs=len(rows),
        solved=sum(bool(row["run"]["solved"]) for row in rows),
        per_seed=tuple(sum(bool(row["run"]["solved"]) for row in rows if row["seed"] == seed) for seed in seeds),
        wasted=sum(1 for t in turns if t.get("waste")),
        turns=len(turns),
        acting=sum(t["kind"] in ("call", "repeat") for t in turns),
        applied=sum(1 for t, _n, _a in edits if t.get("waste") != "unapplied"),
        unapplied=sum(1 for t, _n, _a in edits if t.get("waste") == "unapplied"),
        handed_back=sum(row["run"]["end"] == "handed_back" for row in rows),
        asked=len(asked),
        copies=sum(is_copy(name, args) for name, args in asked),
    )


def arms(rows: Iterable[dict[str, Any]]) -> dict[str, Arm]:
    by_arm: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_arm.setdefault(row["arm"], []).append(row)
    return {name: arm(runs) for name, runs in by_arm.items()}


def bars(found: dict[str, Arm]) -> list[str]:
    """Issue 51's bars, each met or not, on the arms it names (those present)."""
    lines = []
    full, off, alone = found.get("full"), found.get("noblock"), found.get("alone")
    if full and off:
        lines.append(f"defaults solve more than block off: {full.solved} vs {off.solved}: {'met' if full.solved > off.solved else 'NOT met'}")  # fmt: skip
        lines.append(f"wasted with defaults at most half of block off's: {full.wasted} vs {off.wasted}: {'met' if 2 * full.wasted <= off.wasted else 'NOT met'}")  # fmt: skip
    if alone:
        for name, other in (("defaults", full), ("block off", off)):
            if other:
                lines.append(f"{name} solve more than the model alone: {other.solved} vs {alone.solved}: {'met' if other.solved > alone.solved else 'NOT met'}")  # fmt: skip
    for name, other in (("defaults", full), ("block off", off)):
        if other and other.asked:
            share = other.copies / other.asked
            lines.append(f"{name}: copies {other.copies} of {other.asked} edits asked for ({share:.0%}; bar at most 10%): {'met' if share <= 0.10 else 'NOT met'}")  # fmt: skip
    return lines


def report(rows: list[dict[str, Any]]) -> str:
    found = arms(rows)
    head = f"{'arm':<9} {'solved':>7} {'per seed':>10} {'wasted/turns':>13} {'acting':>8} {'applied/not':>12} {'handed back':>12} {'copies/asked':>13}"  # fmt: skip
    lines = [head]
    for name, a in found.items():
        seeds = f"{min(a.per_seed)}-{max(a.per_seed)}" if a.per_seed else "-"
        lines.append(
            f"{name:<9} {a.solved:>3}/{a.runs:<3} {seeds:>10} {a.wasted:>6}/{a.turns:<6} {a.acting:>8} "
            f"{a.applied:>5}/{a.unapplied:<6} {a.handed_back:>12} {a.copies:>6}/{a.asked:<6}"
        )
    return "\n".join([*lines, "", *bars(found)])


def read(records: list[Path]) -> list[dict[str, Any]]:
    """The runs of `records`; SystemExit when their first lines name different commits."""
    rows = [json.loads(line) for path in records for line in path.read_text().splitlines() if line.strip()]
    commits = {row["commit"] for row in rows if "commit" in row}
    if len(commits) > 1:
        raise SystemExit(f"records at different commits ({', '.join(sorted(commits))}): compare arms at one commit")
    return [row for row in rows if "arm" in row]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("records", nargs="+", type=Path)
    args = parser.parse_args()
    print(report(read(args.records)))


if __name__ == "__main__":
    main()
