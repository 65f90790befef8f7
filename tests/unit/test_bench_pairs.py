"""The pairs of the recovery bench's records (`bench/pairs.py`): one seed, block off against on."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import pairs

RERUN = {"calls": [["bash", {"command": "python -m pytest"}]], "waste": "rerun"}
SED = {"calls": [["bash", {"command": "sed -i 's/a/b/' x.py"}]], "waste": ""}
UNAPPLIED = {"calls": [["bash", {"command": "sed -i 's/a/b/' x.py"}]], "waste": "unapplied"}


def _row(
    arm: str, seed: int, turns: list[dict[str, Any]], solved: bool, repo: str = "stack", gamed: bool = False
) -> str:
    """A run as the bench records it since the hidden checks: its own tests, then the checks."""
    run = {"turns": turns, "solved": solved, "tests": solved or gamed, "hidden": True if solved else False if gamed else None}  # fmt: skip
    return json.dumps({"arm": arm, "seed": seed, "repo": repo, "run": run})


def test_a_seed_run_in_both_arms_is_one_pair_and_a_seed_in_one_arm_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    records = tmp_path / "run.jsonl"
    rows = [
        _row("noblock", 0, [RERUN, RERUN, UNAPPLIED, SED], False),
        _row("full", 0, [SED, RERUN, SED], True),
        _row("full", 1, [RERUN], False),  # no block-off run of seed 1: no pair
        _row("noblock", 2, [SED], False, gamed=True),
        _row("full", 2, [SED], True),
    ]
    records.write_text("\n".join(rows) + "\n")
    monkeypatch.setattr(sys, "argv", ["pairs.py", str(records)])
    pairs.main()
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "run seed 0: 1 runs per arm, wasted 3 -> 1 (-67%), re-runs 2 -> 1 (-50%), applied 1 -> 2, solved 0 -> 1, "
        "gamed 0 -> 0"
    )
    assert out[1] == "run seed 2: 1 runs per arm, wasted 0 -> 0 (none to cut), re-runs 0 -> 0 (none to cut), applied 1 -> 1, solved 0 -> 1, gamed 1 -> 0"  # fmt: skip
    assert out[2:] == [
        "pairs 1: wasted mean -67% (-67% to -67%)",
        "re-runs, 1 pairs with some to cut: mean -50% (-50% to -50%)",
        "solved 0/2 -> 2/2, gamed 1 -> 0, ungraded 0 -> 0, applied 2 -> 3",
        "solved per invocation on stack: run 0 -> 2",
        "solved per invocation, mean: off 0.0 (0 to 0), on 2.0 (2 to 2); more with block on in 1 of 1, fewer in 0",
    ]


def test_solved_per_invocation_counts_only_repositories_some_run_solved_and_only_paired_seeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    first.write_text(
        "\n".join(
            [
                _row("noblock", 0, [SED], True, "vowels"),
                _row("full", 0, [SED], True, "vowels"),
                _row("noblock", 0, [RERUN], False, "bank"),  # bank: no run of any file solved it
                _row("full", 0, [RERUN], False, "bank"),
            ]
        )
    )
    second.write_text(
        "\n".join(
            [
                _row("noblock", 0, [SED], True, "vowels"),
                _row("full", 0, [SED], False, "vowels"),
                _row("full", 1, [SED], True, "stack"),  # seed 1 ran with block on only: not counted
            ]
        )
    )
    monkeypatch.setattr(sys, "argv", ["pairs.py", str(first), str(second)])
    pairs.main()
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == [
        "solved per invocation on stack, vowels: first 1 -> 1, second 1 -> 0",
        "solved per invocation, mean: off 1.0 (1 to 1), on 0.5 (0 to 1); more with block on in 0 of 2, fewer in 1",
    ]


def test_a_run_that_ended_green_after_an_edit_of_its_test_applied_is_not_solved() -> None:
    cheat = {"calls": [["bash", {"command": "sed -i 's/push(1)/push(2)/' tests/test_stack.py"}]], "waste": ""}
    tried = {"calls": [["bash", {"command": "sed -i 's/push(1)/push(2)/' tests/test_stack.py"}]], "waste": "unapplied"}
    assert not pairs.solved(json.loads(_row("noblock", 0, [cheat, RERUN], True)))
    assert pairs.solved(json.loads(_row("noblock", 0, [tried, SED], True)))  # the test edit changed nothing
    assert not pairs.solved(json.loads(_row("noblock", 0, [SED], False)))


def test_a_run_green_on_its_tests_alone_is_solved_only_where_its_hidden_checks_passed() -> None:
    """Gamed (the checks failed), or ungraded (a record from before the checks, never replayed):
    neither is solved."""
    assert not pairs.solved(json.loads(_row("full", 0, [SED], False, gamed=True)))
    before = {"arm": "full", "seed": 0, "repo": "stack", "run": {"turns": [SED], "solved": True}}
    assert not pairs.solved(before)
    assert pairs.solved({**before, "grade": {"tests": True, "hidden": True, "by": "replay"}})
