"""The recovery bench's arms are paired by seed: a command's output is the same in both where
the code is the same. Twenty-fifth run: every pair came apart first where the prompts differed
only by pytest's duration, an object's address or the run's path (a nonce), never where the
proxy said something different."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from tiny_agent import REPOS, copy_repo, run_shell, steady


def test_two_runs_of_a_failing_test_print_the_same(tmp_path: Path) -> None:
    """quota's stuck failure twice, in two copies: the same text (its `0x...` address and its
    `in 0.11s` set to one value), and the failure itself kept whole."""
    outputs = []
    for n in (1, 2):
        root = copy_repo("quota", tmp_path / str(n))
        code, output = run_shell("python -m pytest", root)
        assert code == 1
        outputs.append(output)
    assert outputs[0] == outputs[1]
    assert "object at 0x7f0000000000" in outputs[0] and "2 failed in 0.10s" in outputs[0]
    assert "assert False" in outputs[0] and "tests/test_quota.py:7: AssertionError" in outputs[0]
    assert (REPOS / "quota" / "tests").is_dir()


def test_steady_leaves_what_is_not_noise() -> None:
    """Must not: a number that is no duration (`in 12 steps`), a short hex literal (`0xff`), a
    word ending in `s` after `in`."""
    text = "took 3 retries in 12 steps; mask 0xff; in 0.5 seconds; in 1.25s"
    assert steady(text) == "took 3 retries in 12 steps; mask 0xff; in 0.5 seconds; in 0.10s"
