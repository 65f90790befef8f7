"""Evidence extraction: the failing test and location each runner states, and nothing invented."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy.engine.outputs.evidence import Pointers
from proxy.engine.outputs.evidence import extract_pointers as pointers

OUTPUTS = Path(__file__).resolve().parents[1] / "scenarios" / "outputs"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "pytest_addition_a",
            Pointers("tests/test_parse.py::test_addition", "tests/test_parse.py", "tests/test_parse.py", 12),
        ),
        (
            "unittest_a",
            Pointers(
                "tests.test_parse.TestParse.test_addition",
                "/workspace/tests/test_parse.py",
                "/workspace/tests/test_parse.py",
                9,
            ),
        ),
        ("jest_a", Pointers("sum › adds negatives", "src/__tests__/sum.test.ts", "src/__tests__/sum.test.ts", 11)),
        ("vitest_a", Pointers("sum > adds negatives", "src/sum.test.ts", "src/sum.test.ts", 11)),
        ("go_a", Pointers("TestParse", "parse_test.go", "parse_test.go", 14)),
        ("cargo_a", Pointers("tests::parses_sum", None, "src/lib.rs", 42)),
        ("tsc_a", Pointers(None, None, "src/parse.ts", 12)),
        ("mypy_a", Pointers(None, None, "src/app/config.py", 18)),
        ("ruff_a", Pointers(None, None, "src/app/cli.py", 3)),
        ("python_traceback_a", Pointers(None, None, "/workspace/app/config.py", 18)),
    ],
)
def test_runner_outputs_name_test_file_and_line(name: str, expected: Pointers) -> None:
    """Each runner's real-looking output yields its failing test, file and line."""
    assert pointers((OUTPUTS / f"{name}.txt").read_text()) == expected


def test_pytest_failure_in_source_points_at_the_source_frame() -> None:
    """When pytest shows a frame in the code under test, that is the source location."""
    out = (
        "    def test_addition():\n>       assert parse('1 + 2') == 3\n\nsrc/parse.py:3: in parse\n    raise ValueError\n"
        "E   ValueError\n\ntests/test_parse.py:12: ValueError\nFAILED tests/test_parse.py::test_addition - ValueError\n"
    )
    assert pointers(out) == Pointers("tests/test_parse.py::test_addition", "tests/test_parse.py", "src/parse.py", 3)


@pytest.mark.parametrize("name", ["build_no_location", "pytest_pass"])
def test_outputs_without_pointers_invent_none(name: str) -> None:
    """An output that names no test or location gives empty pointers."""
    assert pointers((OUTPUTS / f"{name}.txt").read_text()).empty


def test_library_frames_are_not_the_failure_location() -> None:
    """site-packages and stdlib frames are skipped for the project's own frame."""
    out = 'Traceback (most recent call last):\n  File "/w/app.py", line 5, in <module>\n  File "/usr/lib/python3.11/json/decoder.py", line 337, in decode\njson.decoder.JSONDecodeError: x\n'
    assert pointers(out) == Pointers(None, None, "/w/app.py", 5)


@pytest.mark.parametrize("pseudo", ["<string>", "<stdin>", "<console>"])
def test_a_frame_of_code_given_inline_is_no_file_to_read(pseudo: str) -> None:
    """`python -c '...'` (or code piped to python) fails in a frame whose "file" is `<string>`:
    there is nothing to open, so no location is claimed; a real file's frame below it still is."""
    inline = f"Traceback (most recent call last):\n  File \"{pseudo}\", line 1, in <module>\nNameError: name 'x' is not defined\n"
    assert pointers(inline) == Pointers()
    through = (
        "Traceback (most recent call last):\n"
        f'  File "{pseudo}", line 1, in <module>\n'
        '  File "/workspace/app/calc.py", line 7, in add\n'
        "    return a - b\n"
        "AssertionError\n"
    )
    assert pointers(through) == Pointers(None, None, "/workspace/app/calc.py", 7)


def test_a_syntax_error_points_at_the_file_that_does_not_parse_not_the_import_of_it() -> None:
    """A module that does not parse is named in a frame of its own with no function (corpus,
    mswea1 django-12406: an edit had doubled `widgets.py`'s lines; the proxy pointed at line 4 of
    `boundfield.py`, its import, and told the agent to leave `widgets.py` alone)."""
    out = (
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.6/runpy.py", line 193, in _run_module_as_main\n'
        '  File "/testbed/django/forms/boundfield.py", line 4, in <module>\n'
        "    from django.forms.widgets import Textarea, TextInput\n"
        '  File "/testbed/django/forms/widgets.py", line 3\n'
        "    HTML Widget classes\n"
        "              ^\n"
        "SyntaxError: invalid syntax\n"
    )
    assert pointers(out) == Pointers(None, None, "/testbed/django/forms/widgets.py", 3)


_COLLECTED = (
    "==================================== ERRORS ====================================\n"
    "_____________________ ERROR collecting tests/test_stack.py _____________________\n"
    "tests/test_stack.py:1: in <module>\n"
    "    from stack import Stack\n"
    "{raised}"
    "=========================== short test summary info ============================\n"
    "ERROR tests/test_stack.py\n"
    "!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!\n"
    "1 error in 1.29s\n"
)


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (  # the imported module does not parse: pytest prints the SyntaxError's own location after `E`
            'E     File "/work/stack/stack.py", line 8\nE       def pop(self, 1):\nE                     ^\n'
            "E   SyntaxError: invalid syntax\n",
            Pointers(None, "tests/test_stack.py", "/work/stack/stack.py", 8),
        ),
        (  # the imported module raises as it loads: its frame, below the test module's import
            "stack.py:3: in <module>\n    LIMIT = int(LIMITS)\nE   NameError: name 'LIMITS' is not defined\n",
            Pointers(None, "tests/test_stack.py", "stack.py", 3),
        ),
        (  # a name the test imports is not in the workspace module any more: that module's file
            "E   ImportError: cannot import name 'Stack' from 'stack' (/work/stack/stack.py)\n",
            Pointers(None, "tests/test_stack.py", "/work/stack/stack.py", None),
        ),
        (  # the test module itself raises on a module the workspace does not have: its own line
            "E   ModuleNotFoundError: No module named 'stak'\n",
            Pointers(None, "tests/test_stack.py", "tests/test_stack.py", 1),
        ),
    ],
)
def test_a_test_module_that_did_not_import_points_where_it_broke(raised: str, expected: Pointers) -> None:
    """pytest's collection error names no test: the test module, and the place that broke (recovery
    bench, stack: a sed made `def pop(self, 1):`; with no pointers the proxy asked for the run that
    had just failed, twice, and the model made it)."""
    assert pointers(_COLLECTED.format(raised=raised)) == expected


_IMPORTLIB = (
    "==================================== ERRORS ====================================\n"
    "_____________________ ERROR collecting tests/test_stack.py _____________________\n"
    "ImportError while importing test module '/work/stack/tests/test_stack.py'.\n"
    "Hint: make sure your test modules/packages have valid Python names.\n"
    "Traceback:\n"
    "/root/.pyenv/versions/3.11.7/lib/python3.11/importlib/__init__.py:126: in import_module\n"
    "    return _bootstrap._gcd_import(name[level:], package, level)\n"
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    "tests/test_stack.py:1: in <module>\n"
    "    from stack import Stack\n"
    "{raised}"
    "=========================== short test summary info ============================\n"
    "ERROR tests/test_stack.py\n"
    "!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!\n"
    "1 error in 12.38s\n"
)


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (
            "E   ImportError: cannot import name 'Stack' from 'stack' (/work/stack/stack.py)\n",
            Pointers(None, "tests/test_stack.py", "/work/stack/stack.py", None),
        ),
        (
            "E   ModuleNotFoundError: No module named 'stak'\n",
            Pointers(None, "tests/test_stack.py", "tests/test_stack.py", 1),
        ),
    ],
)
def test_a_collection_error_never_points_into_the_interpreter_s_library(raised: str, expected: Pointers) -> None:
    """pytest shows its `importlib/__init__.py:126: in import_module` frame above the test module's
    import (pytest 8 on Python 3.11, a name the test imports removed from stack.py, run here): it
    must never be where the failure is. It was, and the block rung's re-ask pinned a view of
    `importlib/__init__.py` lines 111-141, twice, after an edit broke an import (issue 51)."""
    found = pointers(_IMPORTLIB.format(raised=raised))
    assert found == expected
    assert "importlib" not in (found.source_file or "")


def test_an_error_with_a_test_id_is_a_failing_test_not_a_collection_error() -> None:
    out = "tests/test_parse.py:12: in test_addition\n    assert 1 == 2\nERROR tests/test_parse.py::test_addition - assert 1 == 2\n"
    assert pointers(out) == Pointers(
        "tests/test_parse.py::test_addition", "tests/test_parse.py", "tests/test_parse.py", 12
    )
