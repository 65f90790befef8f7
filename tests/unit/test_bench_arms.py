"""The recovery bench's arms side by side (`bench/arms.py`): issue 51's table and its bars."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import arms


def _edit(old: str, new: str, **turn: Any) -> dict[str, Any]:
    args = {"command": "str_replace", "path": "/w/a.py", "old_str": old, "new_str": new}
    return {"kind": "call", "calls": [["str_replace_editor", args]], "waste": "", **turn}


RERUN = {"kind": "repeat", "calls": [["execute_bash", {"command": "python -m pytest"}]], "waste": "rerun"}
PROSE = {"kind": "prose", "calls": [], "waste": "prose"}


def _row(arm: str, seed: int, turns: list[dict[str, Any]], solved: bool, end: str = "turns") -> dict[str, Any]:
    return {"arm": arm, "seed": seed, "repo": "vat", "run": {"turns": turns, "solved": solved, "end": end}}


def test_a_copy_counts_only_among_the_edits_the_proxy_asked_for() -> None:
    rows = [
        _row(
            "full",
            1,
            [_edit("x", "x", trips="stuck_same_diagnostic", waste="unapplied"), _edit("x", "y", generations=2)],
            True,
        ),
        _row("full", 2, [_edit("y", "y", waste="unapplied"), RERUN], False),  # the agent's own copy: not asked for
    ]
    found = arms.arms(rows)["full"]
    assert (found.asked, found.copies) == (2, 1)
    assert (found.applied, found.unapplied, found.wasted, found.turns) == (1, 2, 3, 4)
    assert (found.solved, found.per_seed) == (1, (1, 0))


def test_the_bars_are_met_only_when_each_arm_beats_the_one_below() -> None:
    met = [
        _row("alone", 1, [PROSE, PROSE], False),
        _row("noblock", 1, [RERUN, RERUN, _edit("a", "b")], True),
        _row("noblock", 2, [RERUN, RERUN], False),
        _row("full", 1, [_edit("a", "b", trips="x")], True),
        _row("full", 2, [_edit("a", "c", trips="x"), RERUN], True),
    ]
    lines = arms.bars(arms.arms(met))
    assert lines and all(line.endswith(": met") for line in lines), lines
    tied = [*met[:4], _row("full", 2, [RERUN, RERUN, RERUN], False, end="handed_back")]
    lines = arms.bars(arms.arms(tied))
    assert any(line.startswith("defaults solve more than block off: 1 vs 1: NOT met") for line in lines), lines
    assert any(line.startswith("wasted with defaults at most half") and line.endswith("NOT met") for line in lines)
    assert "handed back" in arms.report(tied)


def test_records_of_several_invocations_are_read_as_one_only_at_one_commit(tmp_path: Path) -> None:
    def record(name: str, commit: str, seed: int) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps({"command": [], "commit": commit}) + "\n" + json.dumps(_row("full", seed, [RERUN], True)) + "\n")  # fmt: skip
        return path

    first, second, other = record("a", "c1", 1), record("b", "c1", 2), record("c", "c2", 3)
    assert arms.arms(arms.read([first, second]))["full"].per_seed == (1, 1)
    with pytest.raises(SystemExit, match="different commits"):
        arms.read([first, other])
