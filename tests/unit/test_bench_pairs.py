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


def _row(arm: str, seed: int, turns: list[dict[str, Any]], solved: bool) -> str:
    return json.dumps({"arm": arm, "seed": seed, "run": {"turns": turns, "solved": solved}})


def test_a_seed_run_in_both_arms_is_one_pair_and_a_seed_in_one_arm_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    records = tmp_path / "run.jsonl"
    rows = [
        _row("noblock", 0, [RERUN, RERUN, UNAPPLIED, SED], False),
        _row("full", 0, [SED, RERUN, SED], True),
        _row("full", 1, [RERUN], False),  # no block-off run of seed 1: no pair
    ]
    records.write_text("\n".join(rows) + "\n")
    monkeypatch.setattr(sys, "argv", ["pairs.py", str(records)])
    pairs.main()
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "run seed 0: 1 runs per arm, wasted 3 -> 1 (-67%), re-runs 2 -> 1 (-50%), applied 1 -> 2, solved 0 -> 1"
    )
    assert out[1:] == [
        "pairs 1: wasted mean -67% (-67% to -67%)",
        "re-runs, 1 pairs with some to cut: mean -50% (-50% to -50%)",
        "solved 0/1 -> 1/1, applied 1 -> 2",
    ]
