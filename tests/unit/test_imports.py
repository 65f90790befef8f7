"""`imported_callees`: the functions a piece of code calls that its file imports from another
module, and that module's file, as a table of must-follow and must-not-follow cases."""

from __future__ import annotations

import pytest

from proxy.engine.writing.imports import imported_callees

DESCRIBE = "def describe(celsius):\n    value = to_fahrenheit(celsius)\n    return f'{value:.1f}F'"


@pytest.mark.parametrize(
    ("source", "path", "found"),
    [
        pytest.param(
            "from units import to_fahrenheit\n",
            "/w/temps/report.py",
            (("to_fahrenheit", "/w/temps/units.py"),),
            id="beside the importing file",
        ),
        pytest.param(
            "from .units import to_fahrenheit\n",
            "pkg/report.py",
            (("to_fahrenheit", "pkg/units.py"),),
            id="relative: the same folder",
        ),
        pytest.param(
            "from ..core.units import (\n    convert,\n    to_fahrenheit,\n)\n",
            "src/pkg/sub/report.py",
            (("to_fahrenheit", "src/pkg/core/units.py"),),
            id="two dots, a parenthesised list over lines",
        ),
        pytest.param(
            "from conv import f2c as to_fahrenheit\n",
            "report.py",
            (("to_fahrenheit", "conv.py"),),
            id="imported under another name",
        ),
        pytest.param("import units\n", "report.py", (), id="a module imported whole: not followed"),
        pytest.param("from math import to_fahrenheit\n", "report.py", (), id="the standard library: not the project's"),
        pytest.param(
            "from .math import to_fahrenheit\n",
            "pkg/report.py",
            (("to_fahrenheit", "pkg/math.py"),),
            id="a relative module of a standard name: the project's",
        ),
        pytest.param("from . import to_fahrenheit\n", "report.py", (), id="a module from a package: not followed"),
        pytest.param("from units import *\n", "report.py", (), id="a star: no name to follow"),
        pytest.param("from units import other\n", "report.py", (), id="imported, not called"),
        pytest.param("# from units import to_fahrenheit\n", "report.py", (), id="a comment is no import"),
    ],
)
def test_what_a_failing_function_calls_from_another_module(
    source: str, path: str, found: tuple[tuple[str, str], ...]
) -> None:
    assert imported_callees(DESCRIBE, source + "\n\n" + DESCRIBE, path) == found


def test_a_function_never_follows_itself() -> None:
    code = "def describe(x):\n    return describe(x - 1)"
    assert imported_callees(code, "from report import describe\n" + code, "report.py") == ()
