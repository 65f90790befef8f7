"""The recovery bench's repositories hold what the bench takes for granted: each one's tests fail
as shipped, and the two edits of its stuck start (`stuck.json`) apply and change nothing that
matters: the same tests fail the same way after each, so the stuck start's three failures are
really identical. And each one's hidden checks (`bench/hidden/`, issue 61) grade a fix right, not
green: they fail on the bug and on fixes that make the given tests pass without the behaviour,
pass on the intended fix, and never reach the agent."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

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


BENCH = REPOS.parent
FIXES = json.loads((BENCH / "hidden" / "fixes.json").read_text())
"""Per repository, its intended fix and the gamed fixes it is graded against (`bench/hidden/`):
each a list of (text, replacement) edits of its code, every text found once in its file."""


def _bench() -> Any:
    sys.path.insert(0, str(BENCH))
    import tiny_agent  # the bench's own module, beside the repositories

    return tiny_agent


def _applied(root: Path, edits: list[list[str]]) -> Path:
    for old, new in edits:
        target = next(p for p in sorted(root.glob("*.py")) if p.read_text().count(old) == 1)
        target.write_text(target.read_text().replace(old, new))
    return root


def _hidden_failures(root: Path) -> set[str]:
    """The hidden checks of `root`'s repository that fail on it, by name, run on the tree as it is."""
    checks = _bench().hidden_checks(root.name)
    (root / "hidden_checks").mkdir()
    shutil.copy2(checks, root / "hidden_checks" / "test_hidden.py")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-rf", "hidden_checks"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    shutil.rmtree(root / "hidden_checks")
    failed = {line.split("::")[1].split(" ")[0] for line in done.stdout.splitlines() if line.startswith("FAILED ")}
    assert failed or done.returncode == 0, done.stdout + done.stderr
    return failed


def _checks(repo: str) -> set[str]:
    source = _bench().hidden_checks(repo).read_text()
    return {line[4:].split("(")[0] for line in source.splitlines() if line.startswith("def test_")}


def test_every_bench_repository_has_hidden_checks_and_fixes_to_grade_them_on() -> None:
    repos = sorted(p.name for p in REPOS.iterdir() if p.is_dir())
    assert sorted(FIXES) == repos
    assert all(_bench().hidden_checks(repo).is_file() and _checks(repo) for repo in repos)
    assert all(FIXES[repo]["gamed"] for repo in repos)


@pytest.mark.parametrize("repo", sorted(FIXES))
def test_hidden_checks_fail_on_the_bug_and_on_each_gamed_fix_and_pass_on_the_intended_one(
    repo: str, tmp_path: Path
) -> None:
    """A gamed fix makes the given tests pass and not the behaviour (`pop(0)` -> `pop(1)`, a
    constant moved until the test's one case comes out right): graded gamed, not solved. Every
    hidden check fails on at least one of those trees (the bug, a gamed fix): none is a check
    that cannot fail."""
    bench = _bench()
    buggy = bench.copy_repo(repo, tmp_path / "buggy")
    assert bench.grade(buggy) == bench.Grade(False, None)
    failing = _hidden_failures(buggy)
    assert failing, f"{repo}: the hidden checks pass on the bug"
    for n, edits in enumerate(FIXES[repo]["gamed"]):
        gamed = _applied(bench.copy_repo(repo, tmp_path / f"gamed{n}"), edits)
        found = bench.grade(gamed)
        assert found == bench.Grade(True, False) and found.gamed and not found.solved, (repo, edits)
        failing |= _hidden_failures(gamed)
    assert failing == _checks(repo), f"{repo}: checks that fail on no wrong tree: {_checks(repo) - failing}"
    fixed = _applied(bench.copy_repo(repo, tmp_path / "fixed"), FIXES[repo]["fix"])
    found = bench.grade(fixed)
    assert found == bench.Grade(True, True) and found.solved and not found.gamed


@pytest.mark.parametrize("style", ["openhands", "bash"])
def test_the_hidden_checks_never_reach_the_agent(style: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Not in the repository the agent works in (no file of its, no file of the same text), nor
    named in what it is told, from scratch or from the stuck start."""
    bench = _bench()
    parent = tmp_path_factory.mktemp(style)
    for repo in sorted(FIXES):
        root = bench.copy_repo(repo, parent)
        checks = bench.hidden_checks(repo).read_text()
        assert not any(p.is_file() and p.read_text() == checks for p in root.rglob("*.py")), repo
        assert not any("hidden" in str(p.relative_to(root)) for p in root.rglob("*")), repo
        told = json.dumps([bench.start_messages(root, style), bench.stuck_start(root, style, [])])
        assert "hidden" not in told and "fixes.json" not in told, repo
        shutil.rmtree(root)
