"""The recovery bench's grade (`bench/tiny_agent.tests_pass`): a run is green on the tests its
repository was given, not on tests the agent changed; the agent's tree is left as it was."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from tiny_agent import copy_repo
from tiny_agent import tests_pass as green


def test_a_test_changed_to_pass_is_not_green_and_the_fix_in_the_code_is(tmp_path: Path) -> None:
    root = copy_repo("stack", tmp_path)
    test = root / "tests" / "test_stack.py"
    assert not green(root)
    test.write_text(test.read_text().replace("s.push(1)", "s.push(2)"))  # the model's edit (seed 0)
    assert not green(root)
    assert "s.push(2)" in test.read_text()  # graded in a copy: the agent's test is as it left it
    code = root / "stack.py"
    code.write_text(code.read_text().replace("self.items.pop(0)", "self.items.pop()"))
    assert green(root)


def test_a_directory_that_is_no_bench_repository_is_graded_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("def test_x():\n    assert True\n")
    assert green(tmp_path)
