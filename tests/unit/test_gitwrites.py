"""The files a git command writes (`reading/gitwrites.py`), as a table: the shapes agents undo
their changes with (corpus: mini-swe-agent 1.x and 2.x, OpenHands), and git commands that
write no file they name."""

from __future__ import annotations

import pytest

from proxy.engine.reading.commands import read_command

CASES = [
    ("a path checked out: put back", "git checkout src/sqlfluff/rules/L036.py", [("src/sqlfluff/rules/L036.py", True)]),
    (
        "paths after --: put back",
        "git checkout -- pvlib/pvsystem.py pvlib/singlediode.py",
        [("pvlib/pvsystem.py", True), ("pvlib/singlediode.py", True)],
    ),
    ("from HEAD: put back", "git checkout HEAD -- astroid/modutils.py 2>&1", [("astroid/modutils.py", True)]),
    ("from another revision: new code", "git checkout v2.9.0 -- astroid/modutils.py", [("astroid/modutils.py", False)]),
    (
        "a name with a dot, no --",
        "git checkout ./django/contrib/admin/helpers.py",
        [("./django/contrib/admin/helpers.py", True)],
    ),
    ("git -C dir", "git -C /testbed checkout pydicom/valuerep.py", [("pydicom/valuerep.py", True)]),
    ("git restore", "git restore src/a.py", [("src/a.py", True)]),
    ("git restore from a revision", "git restore --source=HEAD~1 src/a.py", [("src/a.py", False)]),
    ("git restore -s", "git restore -s v1 src/a.py", [("src/a.py", False)]),
    ("a branch switch names no file", "git checkout patch-1", []),
    ("a new branch names no file", "git checkout -b fix/parser", []),
    ("the index only", "git restore --staged src/a.py", []),
    ("the whole tree is not named", "git checkout .", []),
    ("a diff writes only where it is redirected", "git diff -- a.py > patch.txt", [("patch.txt", False)]),
]


@pytest.mark.parametrize(("command", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_files_git_writes(command: str, expected: list[tuple[str, bool]]) -> None:
    writes = read_command(command).writes
    assert [(w.path, w.restores) for w in writes] == expected
    assert all(w.whole is w.restores for w in writes if w.path != "patch.txt")  # another revision's: tracked, changed
