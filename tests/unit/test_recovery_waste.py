"""The recovery bench's wasted-turn measure (`bench/tiny_agent.py`), judged on a real directory:
what a turn wasted is read from what happened to the files, not from what the proxy said."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from tiny_agent import Tools, tree_digest, waste_of

PYTEST = ("bash", {"command": "python -m pytest"})
FAILED = '{"returncode": 1, "output": "1 failed"}'
PASSED = '{"returncode": 0, "output": "1 passed"}'


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    return tmp_path


def test_the_same_failing_check_with_nothing_changed_since_is_a_rerun(repo: Path) -> None:
    history: dict[str, tuple[str, bool]] = {}
    digest = tree_digest(repo)
    assert waste_of(*PYTEST, FAILED, digest, digest, history) == ""
    assert waste_of(*PYTEST, FAILED, digest, digest, history) == "rerun"


def test_the_same_check_after_a_change_is_not_waste(repo: Path) -> None:
    history: dict[str, tuple[str, bool]] = {}
    before = tree_digest(repo)
    waste_of(*PYTEST, FAILED, before, before, history)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    after = tree_digest(repo)
    assert waste_of(*PYTEST, PASSED, after, after, history) == ""


def test_an_edit_that_changes_no_file_is_unapplied_and_one_that_does_is_not(repo: Path) -> None:
    tools = Tools(repo, "openhands")
    args = {"command": "str_replace", "path": str(repo / "calc.py"), "old_str": "a * b", "new_str": "a + b"}
    before = tree_digest(repo)
    result, _ = tools.call("str_replace_editor", args)
    assert waste_of("str_replace_editor", args, result, before, tree_digest(repo), {}) == "unapplied"
    args = {**args, "old_str": "a - b"}
    result, _ = tools.call("str_replace_editor", args)
    assert waste_of("str_replace_editor", args, result, before, tree_digest(repo), {}) == ""


def test_reading_an_unchanged_file_again_is_a_reread_and_the_first_read_is_not(repo: Path) -> None:
    history: dict[str, tuple[str, bool]] = {}
    digest = tree_digest(repo)
    read = ("bash", {"command": "cat calc.py"})
    shown = '{"returncode": 0, "output": "def add(a, b):"}'
    assert waste_of(*read, shown, digest, digest, history) == ""
    assert waste_of(*read, shown, digest, digest, history) == "reread"


def test_a_passing_command_run_again_is_not_a_rerun(repo: Path) -> None:
    history: dict[str, tuple[str, bool]] = {}
    digest = tree_digest(repo)
    assert waste_of(*PYTEST, PASSED, digest, digest, history) == ""
    assert waste_of(*PYTEST, PASSED, digest, digest, history) == ""


def test_an_editor_create_of_a_folder_is_an_error_the_model_reads_not_a_crash_of_the_bench(repo: Path) -> None:
    """The bench stopped on it (IsADirectoryError: a `create` of the repository's own folder)."""
    tools = Tools(repo, "openhands")
    result, over = tools.call("str_replace_editor", {"command": "create", "path": str(repo), "file_text": "x"})
    assert result.startswith("ERROR:") and "directory" in result and not over
    assert not tools.edited and (repo / "calc.py").read_text().startswith("def add")
