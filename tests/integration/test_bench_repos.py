"""The recovery bench's repositories hold what the bench takes for granted: each one's tests fail
as shipped, and the two edits of its stuck start (`stuck.json`) apply and change nothing that
matters: the same tests fail the same way after each, so the stuck start's three failures are
really identical."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPOS = Path(__file__).resolve().parents[2] / "bench" / "repos"


def _failures(root: Path) -> list[str]:
    """The lines naming each failing test and how it failed, as pytest's short summary shows them."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-rf"], cwd=root, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode != 0, f"{root.name}: the tests pass as shipped"
    return sorted(line for line in done.stdout.splitlines() if line.startswith("FAILED "))


@pytest.mark.parametrize("repo", sorted(p.name for p in REPOS.iterdir() if p.is_dir()))
def test_a_bench_repository_fails_and_its_stuck_edits_change_nothing_that_matters(repo: str, tmp_path: Path) -> None:
    root = tmp_path / repo
    shutil.copytree(REPOS / repo, root, ignore=shutil.ignore_patterns("stuck.json", "__pycache__"))
    first = _failures(root)
    assert first
    for old, new in json.loads((REPOS / repo / "stuck.json").read_text())["edits"]:
        target = next(p for p in sorted(root.glob("*.py")) if old in p.read_text())
        target.write_text(target.read_text().replace(old, new))
        assert _failures(root) == first
