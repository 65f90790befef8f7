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


def _row(
    arm: str, seed: int, turns: list[dict[str, Any]], solved: bool, end: str = "turns", gamed: bool = False
) -> dict[str, Any]:
    """A run as the bench records it since the hidden checks: its own tests, then the checks."""
    hidden = True if solved else False if gamed else None
    run = {"turns": turns, "solved": solved, "tests": solved or gamed, "hidden": hidden, "end": end}
    return {"arm": arm, "seed": seed, "repo": "vat", "start": "stuck", "run": run}


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


def test_a_gamed_solve_is_no_solve_and_its_share_of_the_solves_has_a_bar() -> None:
    """Issue 61: the given tests pass and the hidden checks do not. In every arm that speaks, at
    most 1 in 10 of the solves (right and gamed) may be gamed; a record from before the checks
    that could not be replayed is ungraded, neither."""
    rows = [
        _row("full", 1, [_edit("a", "b")], True),
        _row("full", 2, [_edit("a", "c")], False, gamed=True),
        {**_row("full", 3, [_edit("a", "b")], False), "run": {"turns": [], "solved": True, "end": "turns"}},
        _row("alone", 1, [PROSE], False, gamed=True),
    ]
    found = arms.arms(rows)
    assert (found["full"].solved, found["full"].gamed, found["full"].ungraded) == (1, 1, 1)
    lines = arms.bars(found)
    assert "full: gamed 1 of 2 solves (50.0%; bar at most 10%): NOT met" in lines
    assert not any(line.startswith("alone: gamed") for line in lines)  # the model alone does not speak
    assert any(line.startswith("full ") and line.split()[3:5] == ["1", "1"] for line in arms.report(rows).splitlines())


def test_an_edit_asked_for_that_redoes_one_made_or_undoes_the_last_counts_as_redone() -> None:
    """The stuck start's own edit made again (vat's `stuck.json`), the run's own earlier edit made
    again, and A -> B -> A: each redone; a new change is not, nor an edit the proxy did not ask for."""
    stuck = json.loads((arms.REPOS / "vat" / "stuck.json").read_text())["edits"][0]
    turns = [
        _edit(stuck[0], stuck[1], trips="stuck_same_diagnostic"),  # the stuck start's own edit
        _edit("rate=0.02", "rate=0.3"),  # the agent's own: not asked for
        _edit("rate=0.3", "rate=0.02", generations=2),  # undoes the one before
        _edit("rate=0.02", "rate=0.3", generations=2),  # made before in the run
        _edit("rate=0.02", "rate=0.2", generations=2),  # new
    ]
    found = arms.arms([_row("full", 1, turns, True)])["full"]
    assert (found.asked, found.redone) == (4, 3)
    assert "defaults: redone 3 of 4 edits asked for (75.0%; bar at most 10%): NOT met" in arms.bars({"full": found})


def test_records_of_several_invocations_are_read_as_one_only_at_one_commit(tmp_path: Path) -> None:
    def record(name: str, commit: str, seed: int) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps({"command": [], "commit": commit}) + "\n" + json.dumps(_row("full", seed, [RERUN], True)) + "\n")  # fmt: skip
        return path

    first, second, other = record("a", "c1", 1), record("b", "c1", 2), record("c", "c2", 3)
    assert arms.arms(arms.read([first, second]))["full"].per_seed == (1, 1)
    with pytest.raises(SystemExit, match="different commits"):
        arms.read([first, other])
