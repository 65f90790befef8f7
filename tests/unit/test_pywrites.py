"""The files an inline Python program writes, read from its code (`reading/pywrites.py`), as a
table: the shapes mini-swe-agent 1.x runs send as edits (`bench/corpus/`, mswea1-cam-*), and
programs that only read or write nothing that can be told."""

from __future__ import annotations

import pytest

from proxy.engine.reading.pywrites import python_program, python_writes

CASES = [
    (
        "a Path read, replaced and written back: in place",
        "from pathlib import Path\np = Path('a/b.py')\ns = p.read_text()\np.write_text(s.replace('x > 1', 'x'))",
        (("a/b.py", False),),
    ),
    (
        "open for reading, then for writing, through a name: in place",
        "p = 'django/x.py'\nwith open(p, 'r', encoding='utf-8') as f:\n    s = f.read()\n"
        "with open(p, mode='w', encoding='utf-8') as f:\n    f.write(s)",
        (("django/x.py", False),),
    ),
    ("a file only written: whole", "open('new_test.py', 'w').write('x')", (("new_test.py", True),)),
    (
        "Path / 'x' joined",
        "from pathlib import Path\nroot = Path('/testbed')\n(root / 'pkg' / 'm.py').write_text('')",
        (("/testbed/pkg/m.py", True),),
    ),
    (
        "os.path.join of strings, appended",
        "import os\nopen(os.path.join('pkg', 'm.py'), 'a').write('x')",
        (("pkg/m.py", True),),
    ),
    ("Path.open for writing", "import pathlib\npathlib.Path('a.py').open('w').write('')", (("a.py", True),)),
    ("a file only read", "print(open('a/b.py').read())", ()),
    ("a comparison and a semicolon in a string are no writes", "x = 2 > 1; print('a > b; rm -rf /')", ()),
    ("a path from a loop cannot be told", "for p in ['a.py', 'b.py']:\n    open(p, 'w').write('')", ()),
    ("a name bound twice cannot be told", "p = 'a.py'\np = 'b.py'\nopen(p, 'w').write('')", ()),
    ("an f-string path cannot be told", "n = 1\nopen(f'out{n}.py', 'w').write('')", ()),
    ("a program that does not parse gives nothing", "open('a.py', 'w').write(", ()),
    ("a mode that cannot be told is no write", "import sys\nopen('a.py', sys.argv[1]).write('')", ()),
]


@pytest.mark.parametrize(("code", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_files_written(code: str, expected: tuple[tuple[str, bool], ...]) -> None:
    assert python_writes(code) == expected


CONDITIONAL = [
    (
        "under an if",
        "s = open('a.py').read()\nif 'x' in s:\n    open('a.py', 'w').write(s)\nelse:\n    print('not found')",
    ),
    ("in a loop", "for n in range(2):\n    open('a.py', 'w').write('')"),
    ("in a try", "try:\n    open('a.py', 'w').write('')\nexcept OSError:\n    pass"),
    ("in a function", "def f():\n    open('a.py', 'w').write('')\nf()"),
]


@pytest.mark.parametrize("code", [c[1] for c in CONDITIONAL], ids=[c[0] for c in CONDITIONAL])
def test_writes_that_may_not_run_are_not_counted(code: str) -> None:
    assert python_writes(code) == ()


def test_a_with_block_runs_whatever_happens() -> None:
    code = "with open('a.py') as f:\n    s = f.read()\nwith open('a.py', 'w') as f:\n    f.write(s.replace('x', 'y'))"
    assert python_writes(code) == (("a.py", False),)


GUARDED = (
    "from pathlib import Path\np = Path('a/b.py')\ns = p.read_text()\n"
    "if 'x' in s:\n    p.write_text(s.replace('x', 'y'))\n    print('patched a/b.py')\nelse:\n    print('not found')"
)


@pytest.mark.parametrize(
    ("output", "made"),
    [
        ("patched a/b.py\n", True),
        ("not found\n", False),
        ("Traceback (most recent call last):\nFileNotFoundError: a/b.py", False),
        ("patched a/b.py\nnot found\n", False),
    ],
    ids=["the branch's text: made", "the else's text: not made", "neither: not made", "both: cannot tell"],
)
def test_a_guarded_write_is_made_when_the_output_says_its_branch_ran(output: str, made: bool) -> None:
    program = python_program(GUARDED)
    assert program.writes == ()
    assert [(g.path, g.whole) for g in program.guarded] == [("a/b.py", False)]
    assert program.guarded[0].made(output) is made


def test_a_branch_that_prints_only_what_its_else_prints_tells_nothing() -> None:
    code = "p = 'a.py'\nif True:\n    open(p, 'w').write('')\n    print('done now')\nelse:\n    print('done now')"
    assert python_program(code).guarded == ()
