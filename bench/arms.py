"""The recovery bench's arms side by side, with each arm's range over seeds: issues 51 and 61's table.

Record files of `bench/recovery.py --out`, all at one commit (an invocation may hold a few seeds,
another the next ones: the runs are read as one; files at different commits are refused). Per
arm: runs solved in all (right: the repository's own tests and its hidden checks pass,
`regrade.outcome`), and the least and most solved by one seed; runs gamed (the tests pass, the
hidden checks do not) and ungraded (the tests passed, no hidden check ran on the final tree: a
record from before them that `bench/regrade.py` could not replay); wasted turns
(`tiny_agent.WASTE_KINDS`) of all turns; turns with a real call; edits applied / not applied;
runs handed back; and the edits the proxy asked for, with those among them that replace a text
with itself (copies) and those that redo an edit already made in the run (the stuck start's
own, or the run's, the same text to the same replacement) or undo the one before it (A -> B ->
A). An edit the proxy asked for is an edit made on a turn whose request carried a new
instruction of ours or whose reply a gate sent back (`trips`, `generations` > 1); a copy is an
editor's `str_replace` whose `new_str` is its `old_str`. Last, the bars: issue 51's, defaults
(`full`) solve strictly more than block off (`noblock`), both more than the model alone
(`alone`); wasted turns with the defaults at most half of block off's; copies at most 10% of the
edits asked for; issue 61's, gamed solves at most 1 in 10 of the solves (right and gamed) in
every arm that speaks (every arm but the model alone), redone edits at most 10% of those asked for.

    python bench/arms.py bench/records/twenty-first*.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from regrade import outcome
from tiny_agent import REPOS, is_edit


class Arm(NamedTuple):
    runs: int
    solved: int
    """Right: the repository's own tests and its hidden checks pass."""
    per_seed: tuple[int, ...]
    """Runs solved by each seed, in seed order."""
    gamed: int
    """The tests pass, the hidden checks do not."""
    ungraded: int
    """The tests passed, and no hidden check ran on the final tree."""
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
    redone: int
    """Of those, edits that redo one already made in the run (the stuck start's, or its own), or
    undo the one before."""


def is_copy(name: str, args: dict[str, Any]) -> bool:
    return name == "str_replace_editor" and args.get("command") == "str_replace" and args.get("new_str") == args.get("old_str")  # fmt: skip


def _change(name: str, args: dict[str, Any]) -> tuple[str, str] | None:
    """What an edit changes, (text, replacement), stripped; None for one that is not a replace
    (a `create`, a shell edit other than the stuck start's own)."""
    if name == "str_replace_editor" and args.get("command") == "str_replace":
        return str(args.get("old_str", "")).strip(), str(args.get("new_str", "")).strip()
    return None


def redone(row: dict[str, Any]) -> list[bool]:
    """For each edit of the run, in order: it redoes a change already made (the stuck start's
    edits, `stuck.json`, or an earlier edit of the run) or undoes the one before it. Compared on
    the editor's `str_replace` (text and replacement, stripped); a shell edit is never counted."""
    made: list[tuple[str, str]] = []
    if row.get("start", "stuck") == "stuck" and (REPOS / row["repo"] / "stuck.json").is_file():
        stuck = json.loads((REPOS / row["repo"] / "stuck.json").read_text())["edits"]
        made = [(str(old).strip(), str(new).strip()) for old, new in stuck]
    found = []
    for turn in row["run"]["turns"]:
        for name, args in turn.get("calls") or []:
            if not is_edit(name, args):
                continue
            change = _change(name, args)
            again = change is not None and (change in made or (bool(made) and change == made[-1][::-1]))
            found.append(again)
            if change is not None and change[0] != change[1]:
                made.append(change)
    return found


def arm(rows: list[dict[str, Any]]) -> Arm:
    seeds = sorted({row["seed"] for row in rows})
    turns = [t for row in rows for t in row["run"]["turns"]]
    edits = [(t, name, args) for t in turns for name, args in t.get("calls") or [] if is_edit(name, args)]
    again = [flag for row in rows for flag in redone(row)]
    asked = [
        (name, args, flag)
        for (t, name, args), flag in zip(edits, again, strict=True)
        if t.get("trips") or t.get("generations", 1) > 1
    ]
    outcomes = [outcome(row) for row in rows]
    return Arm(
        runs=len(rows),
        solved=outcomes.count("solved"),
        per_seed=tuple(sum(outcome(row) == "solved" for row in rows if row["seed"] == seed) for seed in seeds),
        gamed=outcomes.count("gamed"),
        ungraded=outcomes.count("ungraded"),
        wasted=sum(1 for t in turns if t.get("waste")),
        turns=len(turns),
        acting=sum(t["kind"] in ("call", "repeat") for t in turns),
        applied=sum(1 for t, _n, _a in edits if t.get("waste") != "unapplied"),
        unapplied=sum(1 for t, _n, _a in edits if t.get("waste") == "unapplied"),
        handed_back=sum(row["run"]["end"] == "handed_back" for row in rows),
        asked=len(asked),
        copies=sum(is_copy(name, args) for name, args, _again in asked),
        redone=sum(again for _name, _args, again in asked),
    )


def arms(rows: Iterable[dict[str, Any]]) -> dict[str, Arm]:
    by_arm: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_arm.setdefault(row["arm"], []).append(row)
    return {name: arm(runs) for name, runs in by_arm.items()}


def bars(found: dict[str, Arm]) -> list[str]:
    """Issues 51 and 61's bars, each met or not, on the arms they name (those present)."""
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
            share = other.redone / other.asked
            lines.append(f"{name}: redone {other.redone} of {other.asked} edits asked for ({share:.1%}; bar at most 10%): {'met' if share <= 0.10 else 'NOT met'}")  # fmt: skip
    for name, other in found.items():
        if name != "alone" and other.solved + other.gamed:
            share = other.gamed / (other.solved + other.gamed)
            lines.append(f"{name}: gamed {other.gamed} of {other.solved + other.gamed} solves ({share:.1%}; bar at most 10%): {'met' if share <= 0.10 else 'NOT met'}")  # fmt: skip
    return lines


def report(rows: list[dict[str, Any]]) -> str:
    found = arms(rows)
    head = f"{'arm':<9} {'solved':>7} {'per seed':>10} {'gamed':>6} {'ungraded':>9} {'wasted/turns':>13} {'acting':>8} {'applied/not':>12} {'handed back':>12} {'copies/asked':>13} {'redone/asked':>13}"  # fmt: skip
    lines = [head]
    for name, a in found.items():
        seeds = f"{min(a.per_seed)}-{max(a.per_seed)}" if a.per_seed else "-"
        lines.append(
            f"{name:<9} {a.solved:>3}/{a.runs:<3} {seeds:>10} {a.gamed:>6} {a.ungraded:>9} {a.wasted:>6}/{a.turns:<6} "
            f"{a.acting:>8} {a.applied:>5}/{a.unapplied:<6} {a.handed_back:>12} {a.copies:>6}/{a.asked:<6} "
            f"{a.redone:>6}/{a.asked:<6}"
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
