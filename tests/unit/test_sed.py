"""`reading.sed.substitution`: an in-place sed read as plain text only where it is plain text."""

from __future__ import annotations

import pytest

from proxy.engine.detectors.pointless_call import pointless
from proxy.engine.reading.noop import unchanging
from proxy.engine.reading.sed import Sought, never_matches, rejected_because, script_refused, sought, substitution
from proxy.settings.kinds import CallKind

CASES = [
    ("sed -i 's/return a - b/return a + b/' calc.py", ("return a - b", "return a + b")),
    ("cd /repo && sed -i.bak -e 's|x = 1|x = 2|g' f.py", ("x = 1", "x = 2")),
    (
        'sed -i \'s/raise ValueError("no")/raise KeyError("no")/\' bank.py',
        ('raise ValueError("no")', 'raise KeyError("no")'),
    ),
    ("sed -i -E 's/(a)/b/' f.py", None),  # a group, in an extended expression
    ("sed -i 's/a.b/c/' f.py", None),  # `.` matches any character
    ("sed -i 's/a/\\1/' f.py", None),  # a back-reference
    ("sed -i 's/a/[&]/' f.py", None),  # `&` writes the match
    ("sed -i 's/a/b/; s/c/d/' f.py", None),  # two substitutions
    ("sed -i -e 's/a/b/' -e 's/c/d/' f.py", None),
    ("sed -i 's/a/b/' f.py && sed -i 's/c/d/' g.py", None),  # two seds
    ("sed -i '3d' f.py", None),  # no substitution
    ("sed 's/a/b/' f.py", None),  # not in place
    ("sed -n '1,5p' f.py", None),
    ("grep -n 's/a/b/' f.py", None),
]


@pytest.mark.parametrize(("command", "expected"), CASES, ids=[c for c, _ in CASES])
def test_an_in_place_substitution_is_read_only_where_it_is_literal(
    command: str, expected: tuple[str, str] | None
) -> None:
    assert substitution(command) == expected


def test_a_sed_writing_the_text_it_replaces_is_pointless_and_one_changing_it_is_not() -> None:
    same = {"command": "sed -i 's/return year % 4 == 0/return year % 4 == 0/' leap.py"}
    other = {"command": "sed -i 's/return year % 4 == 0/return year % 400 == 0/' leap.py"}
    regex = {"command": "sed -i 's/a.b/a.b/' leap.py"}  # `.` matches `axb`, which it rewrites
    assert (found := pointless(CallKind.EDIT, same)) is not None and found.copy and "changes nothing" in found.reason
    assert pointless(CallKind.EDIT, other) is None
    assert pointless(CallKind.EDIT, regex) is None


def test_an_edit_whose_replacement_is_its_text_is_read_as_changing_nothing_whatever_its_tool() -> None:
    same = {"command": "str_replace", "path": "leap.py", "old_str": "x == 0", "new_str": "x == 0"}
    assert (found := unchanging(CallKind.EDIT, same)) is not None and found.copy and "changes nothing" in found.reason
    assert unchanging(CallKind.EDIT, {**same, "new_str": "x == 1"}) is None
    assert unchanging(CallKind.READ, {"command": "sed -i 's/a/a/' f.py"}) is None  # no edit, by its tool


SOUGHT = [
    ("sed -i 's/^return x == 0$/return x != 0/' leap.py", Sought("return x == 0", start=True, end=True)),
    ("sed -i 's/^    return/    yield/' f.py", Sought("    return", start=True)),
    ("sed -i 's/x == 0$/x != 0/' f.py", Sought("x == 0", end=True)),
    ("sed -i 's/a - b/a + b/' f.py", Sought("a - b")),
    ("sed -i 's/^a.b$/c/' f.py", Sought("a.b", start=True, end=True, wild=True)),  # `.` matches any character
    ("sed -i 's/a*b/c/' f.py", None),  # `*`: not followed
    ("sed -i 's/^a\\$/c/' f.py", None),  # an escaped `$` is no anchor
]


@pytest.mark.parametrize(("command", "expected"), SOUGHT, ids=[c for c, _ in SOUGHT])
def test_what_a_substitution_looks_for_is_read_with_its_line_anchors(command: str, expected: Sought | None) -> None:
    assert sought(command) == expected


def test_a_line_anchored_text_is_found_only_on_a_line_that_starts_or_ends_with_it_numbered_or_not() -> None:
    whole = Sought("return x == 0", start=True, end=True)
    assert not whole.found_in("def f(x):\n    return x == 0\n")  # indented: `^return` matches nothing
    assert whole.found_in("def f(x):\nreturn x == 0\n")
    assert whole.found_in("     1\tdef f(x):\n     2\treturn x == 0\n")  # an editor's numbered view
    assert Sought("    return x", start=True).found_in("     2\t    return x == 0\n")
    assert not Sought("x == 1", end=True).found_in("    return x == 1 or y\n")


def test_a_pattern_with_any_character_is_found_only_where_some_line_matches_it() -> None:
    """Recovery bench, leap (one shell): `s/True for Gregorian leap years./.../` sent to the test,
    which has no such line; in the code file, where it is, it would change it."""
    dotted = sought("sed -i 's/True for Gregorian leap years./X/g' tests/test_leap.py")
    assert dotted is not None and dotted.wild
    assert not dotted.found_in("from leap import is_leap\n\n\ndef test_century_is_not_leap():\n")
    assert dotted.found_in('def is_leap(year):\n    """True for Gregorian leap years."""\n')
    assert dotted.found_in('     2\t    """True for Gregorian leap yearsX"""\n')  # any character, numbered view
    assert not Sought("a.c", start=True, wild=True).found_in("  abc\n")  # held to the line's start
    assert not Sought("a.c", wild=True).found_in("a\nc\n")  # never across a line's end


@pytest.mark.parametrize(
    ("output", "cause"),
    [
        ("sed: -e expression #1, char 137: unterminated `s' command\n", "lacks its closing `/`"),
        ("sed: -e expression #1, char 22: unknown option to `s'\n", "ended it early"),
        ("sed: -e expression #1, char 9: unterminated address regex\n", "its address"),
        ("sed: -e expression #1, char 28: Invalid range end\n", "cannot compile it (Invalid range end)"),
        ("sed: can't read nope.py: No such file or directory\n", None),
        ("unterminated `s' command", None),  # not sed's own words: no `sed: ` before them
    ],
    ids=[
        "no closing slash",
        "a slash in the text",
        "a slash in the address",
        "a pattern sed cannot compile",
        "a missing file",
        "no sed",
    ],
)
def test_why_sed_rejected_a_script(output: str, cause: str | None) -> None:
    found = rejected_because(output)
    assert (found is None) if cause is None else (found is not None and cause in found)


UNTERMINATED = "sed: -e expression #1, char 40: unterminated `s' command"


@pytest.mark.parametrize(
    ("command", "output", "refused"),
    [
        ("sed -i 's/a/b\nc/' f.py", UNTERMINATED, True),
        ("cd /repo && sed -i 's/a/b\nc/' f.py", UNTERMINATED, True),
        ("sed -i 's/a/b/x' f.py", "sed: -e expression #1, char 7: unknown option to `s'", True),
        ("sed -i 's/pop(self)[::-1]/pop(self)/' stack.py", "sed: -e expression #1, char 28: Invalid range end", True),
        ("sed -i 's/a/b/' f.py g.py", "sed: can't read g.py: No such file or directory", False),
        ("sed -i 's/a/b\nc/' f.py; python fix.py", UNTERMINATED, False),
        ("sed -i 's/a/b/' f.py && sed -i 's/c/d\ne/' g.py", UNTERMINATED, False),
        ("python -m pytest", UNTERMINATED, False),
    ],
    ids=[
        "one sed, its script refused: nothing written",
        "after a cd",
        "an unknown option to s",
        "a pattern sed cannot compile (the recovery bench, stack seed 1: `[::-1]` read as a range)",
        "a file it could not read: it may have changed the other",
        "another command after it, run whatever sed did",
        "two seds: the first may have run",
        "no sed at all",
    ],
)
def test_a_sed_whose_script_sed_refused_wrote_nothing(command: str, output: str, refused: bool) -> None:
    assert script_refused(command, output) is refused


STACK_SED = (
    "sed -i 's/^    def pop(self):\\n        item = self.items.pop(0)\\n        return item\\n$/"
    "    def pop(self):\\n        return self.items.pop(-1)\\n/' stack.py"
)
"""Qwen2.5-Coder-1.5B's edit on the recovery bench (stack, one shell), three times in one run."""


@pytest.mark.parametrize(
    ("command", "never"),
    [
        pytest.param(STACK_SED, True, id="the bench's: a function's lines joined by \\n"),
        pytest.param("sed -i 's/a\\nb/c/g' f.py", True, id="one line break between two characters"),
        pytest.param("cd /w && sed -i -E 's/x = 1\\ny = 2/x = 2/' f.py", True, id="extended, no operator"),
        pytest.param("sed -i 's/a.\\nb/c/' f.py", True, id="any character still one character"),
        pytest.param("sed -i 's/a\\n*b/c/' f.py", False, id="a repeat: may match with no line break"),
        pytest.param("sed -i 's/a[\\n]b/c/' f.py", False, id="a bracket"),
        pytest.param("sed -i 's/a\\|b\\nc/x/' f.py", False, id="GNU basic alternative"),
        pytest.param("sed -i 's/a\\(\\n\\)\\?b/x/' f.py", False, id="GNU basic group and optional"),
        pytest.param("sed -i -E 's/(a|\\n)b/x/' f.py", False, id="extended group"),
        pytest.param(
            "sed -i 's/a\\\\nb/c/' f.py", False, id="an escaped backslash: the text \\n, which a line may have"
        ),
        pytest.param("sed -i 's/a/b\\nc/' f.py", False, id="a line break written, not looked for"),
        pytest.param("sed -i 'N;s/a\\nb/c/' f.py", False, id="a script that joins lines"),
        pytest.param("sed -i 's/a\\nb/c/; s/x/y/' f.py", False, id="a second command"),
        pytest.param("sed -z -i 's/a\\nb/c/' f.py", False, id="-z: the file read whole"),
        pytest.param("sed 's/a\\nb/c/' f.py", False, id="not in place"),
        pytest.param("sed -i 's/a\\nb/c/' f.py && sed -i 's/d/e/' g.py", False, id="two seds"),
    ],
)
def test_a_substitution_looking_for_a_line_break_never_matches(command: str, never: bool) -> None:
    """sed reads a file a line at a time, its line break taken off: a pattern that needs one
    matches nothing, and the edit changes nothing (`unchanging`), whatever sed answers (exit 0)."""
    assert never_matches(command) is never
    found = unchanging(CallKind.EDIT, {"command": command})
    assert (found is not None) is never
    assert found is None or not found.copy  # no copy: the re-ask must not say "replaced with themselves"
