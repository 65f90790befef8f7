"""The tiny agent's `sweagent` style (`bench/swe_tools.py`): SWE-agent 0.x's viewer and editor
commands in one bash tool, run for real on a directory, printing the shapes the proxy reads off
the real scaffold (`[File: ...]`, the guard's "Your changes have NOT been applied")."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from swe_tools import WINDOW, Viewer
from tiny_agent import Tools, calls_in_text, is_edit, tree_digest, waste_of

from proxy.engine.outputs.outcome import Outcome, result_outcome
from proxy.engine.reading.classify import Classifier
from proxy.settings.kinds import CallKind
from proxy.settings.policy import default_policy

CODE = "def add(a, b):\n    return a - b\n"


@pytest.fixture
def tools(tmp_path: Path) -> Tools:
    (tmp_path / "calc.py").write_text(CODE)
    (tmp_path / "long.py").write_text("".join(f"x{n} = {n}\n" for n in range(1, 251)))
    return Tools(tmp_path, "sweagent", timeout=30)


def bash(tools: Tools, command: str) -> str:
    result, over = tools.call("bash", {"command": command})
    assert not over
    return result


def test_open_shows_the_file_with_its_header_and_the_viewer_state(tools: Tools) -> None:
    shown = bash(tools, "open calc.py")
    assert shown.startswith(f"[File: {tools.root / 'calc.py'} (2 lines total)]\n1:def add(a, b):\n2:    return a - b\n")
    assert shown.endswith(f"(Open file: {tools.root / 'calc.py'})\n(Current directory: {tools.root})")


def test_the_window_pages_and_goto_centres(tools: Tools) -> None:
    first = bash(tools, "open long.py")
    assert "1:x1 = 1" in first and f"{WINDOW}:x{WINDOW} = {WINDOW}" in first and "(150 more lines below)" in first
    second = bash(tools, "scroll_down")
    assert "(98 more lines above)" in second and "99:x99 = 99" in second and "1:x1 = 1\n" not in second
    assert "198:x198" in second and "199:x199" not in second
    last = bash(tools, "goto 240")
    assert "(150 more lines above)" in last and "250:x250 = 250" in last and "more lines below" not in last
    assert bash(tools, "goto 400").startswith("Error: <line> must be between 1 and 250")


def test_an_edit_that_compiles_is_applied_and_shown(tools: Tools) -> None:
    bash(tools, "open calc.py")
    shown = bash(tools, "edit 2:2\n    return a + b\nend_of_edit")
    assert (tools.root / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert "2:    return a + b" in shown and "File updated." in shown


def test_an_edit_that_breaks_the_syntax_is_turned_down_as_the_guard_words_it(tools: Tools) -> None:
    bash(tools, "open calc.py")
    before = tree_digest(tools.root)
    refused = bash(tools, "edit 2:2\n    return (a + b\nend_of_edit")
    assert (tools.root / "calc.py").read_text() == CODE
    assert "E999 SyntaxError" in refused and "Your changes have NOT been applied" in refused
    # The proxy reads the refusal as the real scaffold's: an edit that failed, not a landed one.
    assert result_outcome(CallKind.EDIT, refused, is_error=False) is Outcome.FAIL
    history: dict[str, tuple[str, bool]] = {}
    args = {"command": "edit 2:2\n    return (a + b\nend_of_edit"}
    assert is_edit("bash", args)
    assert waste_of("bash", args, refused, before, tree_digest(tools.root), history) == "unapplied"


def test_searches_list_what_they_found(tools: Tools) -> None:
    found = bash(tools, "search_dir add")
    assert found.startswith(f'Found 1 matches for "add" in {tools.root}:\n{tools.root / "calc.py"} (1 matches)\n')
    assert bash(tools, "search_file return calc.py").startswith(
        f'Found 1 matches for "return" in {tools.root / "calc.py"}:\nLine 2:    return a - b\n'
    )
    assert bash(tools, "find_file '*.py'").startswith(f'Found 2 matches for "*.py" in {tools.root}:\n')
    assert bash(tools, "search_dir nowhere_at_all").startswith('No matches found for "nowhere_at_all"')


def test_navigation_without_an_open_file_and_bad_arguments_answer_plainly(tools: Tools) -> None:
    assert bash(tools, "scroll_down").startswith("No file open.")
    assert bash(tools, "goto 3").startswith("No file open.")
    assert bash(tools, "open missing.py").startswith("File missing.py not found")
    assert bash(tools, "open ../../etc/passwd").startswith("File ../../etc/passwd not found")
    assert bash(tools, "edit 2:2\nx\nend_of_edit").startswith("No file open.")
    assert bash(tools, "edit two\nx").startswith("Usage: edit")
    # A quote that does not close is an argument the command cannot take, not a crash of the run.
    assert bash(tools, 'open "calc.py').startswith("Usage: open")
    assert bash(tools, "search_dir 'add").startswith("Usage: search_dir")


def test_other_commands_run_in_the_shell_and_submit_ends_the_run(tools: Tools) -> None:
    assert bash(tools, "ls").startswith("calc.py\nlong.py\n")
    assert bash(tools, "true").startswith("Your command ran successfully and did not produce any output.")
    assert tools.call("bash", {"command": "submit"}) == ("Submitted.", True)


def test_the_proxy_reads_its_commands_as_reads_searches_and_edits() -> None:
    classifier = Classifier(default_policy().classify)
    kinds = {
        command: classifier.classify("bash", {"command": command}).kind
        for command in ("open calc.py", "goto 40", "scroll_down", "search_dir add", "edit 2:2\nx\nend_of_edit")
    }
    assert kinds == {
        "open calc.py": CallKind.READ,
        "goto 40": CallKind.READ,
        "scroll_down": CallKind.READ,
        "search_dir add": CallKind.SEARCH,
        "edit 2:2\nx\nend_of_edit": CallKind.EDIT,
    }


def test_a_call_written_as_text_names_the_one_tool() -> None:
    text = '{"name": "bash", "arguments": {"command": "open calc.py"}}'
    assert calls_in_text(text, "sweagent") == [("bash", {"command": "open calc.py"})]


def test_a_red_pytest_run_is_a_failure_for_the_rerun_measure(tmp_path: Path) -> None:
    red = "===== 1 failed, 2 passed in 0.10s =====\n(Open file: n/a)"
    digest = tree_digest(tmp_path)
    history: dict[str, tuple[str, bool]] = {}
    args = {"command": "python -m pytest"}
    assert waste_of("bash", args, red, digest, digest, history) == ""
    assert waste_of("bash", args, red, digest, digest, history) == "rerun"
    green = "===== 3 passed in 0.10s =====\n(Open file: n/a)"
    assert waste_of("bash", args, green, digest, digest, {}) == ""
    assert waste_of("bash", args, green, digest, digest, {"x": ("", False)}) == ""


def test_the_viewer_refuses_paths_outside_its_root(tmp_path: Path) -> None:
    viewer = Viewer(tmp_path, lambda _command: "")
    assert viewer.run("create ../outside.py")[0].startswith("Usage: create")
    assert not (tmp_path.parent / "outside.py").exists()
