"""`reading.replace_refused`: an editor's refusal of a replace for its text to replace, which the
same text meets again whatever the replacement; and the refusals it must never be read as."""

from __future__ import annotations

import pytest

from proxy.engine.reading.replace_refused import absent, more_than_once, text_refused, without_replacement

REFUSED = [
    (
        "OpenHands, not found",
        "ERROR:\nNo replacement was performed, old_str `x = 1` did not appear verbatim in /w/a.py.",
        False,
    ),
    (
        "OpenHands, twice",
        "ERROR:\nNo replacement was performed. Multiple occurrences of old_str `x = 1` in lines [3, 9]. Please ensure it is unique.",
        True,
    ),
    (
        "the recovery bench's editor, twice",
        "ERROR:\nNo replacement was performed, old_str `x = 1` appears 2 times in /w/a.py.",
        True,
    ),
    (
        "Claude Code, not found",
        "<tool_use_error>String to replace not found in file.\nString: x = 1</tool_use_error>",
        False,
    ),
    (
        "Claude Code, twice",
        "<tool_use_error>Found 2 matches of the string to replace, but replace_all is false.</tool_use_error>",
        True,
    ),
    ("Cline, no match", "The SEARCH block:\nx = 1\n...does not match anything in the file.", False),
]
NOT_REFUSED = [
    ("OpenHands, a copy", "ERROR:\nNo replacement was performed. `new_str` and `old_str` must be different."),
    (
        "Claude Code, a copy",
        "<tool_use_error>No changes to make: old_string and new_string are exactly the same.</tool_use_error>",
    ),
    ("Claude Code, no such file", "<tool_use_error>File does not exist.</tool_use_error>"),
    (
        "SWE-agent's syntax check",
        "Your proposed edit has introduced new syntax error(s).\nYour changes have NOT been applied.",
    ),
    (
        "an edit that landed",
        "The file /w/a.py has been edited. Here's the result of running `cat -n`:\n     1\tx = 2\n",
    ),
    ("a test that prints not found", "E   AssertionError: user not found\n1 failed in 0.1s"),
]


@pytest.mark.parametrize(("name", "output", "many"), REFUSED, ids=[c[0] for c in REFUSED])
def test_a_refusal_for_the_text_to_replace_is_read_as_one(name: str, output: str, many: bool) -> None:
    assert text_refused(output)
    assert more_than_once(output) is many


@pytest.mark.parametrize(("name", "output"), NOT_REFUSED, ids=[c[0] for c in NOT_REFUSED])
def test_other_refusals_and_outputs_are_not(name: str, output: str) -> None:
    assert not text_refused(output)


def test_the_edit_without_its_replacement_is_the_same_whatever_replaces_and_differs_in_anything_else() -> None:
    edit = {"command": "str_replace", "path": "/w/a.py", "old_str": "x = 1", "new_str": "x = 2"}
    same = without_replacement("str_replace_editor", edit)
    assert same and same == without_replacement("str_replace_editor", {**edit, "new_str": "x = 3"})
    assert same != without_replacement("str_replace_editor", {**edit, "old_str": "x = 1 "})
    assert same != without_replacement("str_replace_editor", {**edit, "path": "/w/b.py"})
    assert same != without_replacement("Edit", edit)
    claude = {"file_path": "/w/a.py", "old_string": "x = 1", "new_string": "x = 2"}
    assert without_replacement("Edit", claude) != without_replacement("Edit", {**claude, "replace_all": True})
    assert without_replacement("execute_bash", {"command": "sed -i 's/x = 1/x = 2/' a.py"}) == ""


SHOWN = "Here's the result of running `cat -n` on /w/a.py:\n     1\tdef parse(s):\n     2\t    return a - b\n     3\tSEP = '+'\n"


@pytest.mark.parametrize(
    ("text", "missing"),
    [
        ("def parse(s):\n    return a - b", False),  # there as sent
        ("def parse(s):\n  return a - b", False),  # there but for its indentation: some editors forgive it
        ("return  a -\tb", False),  # its runs of whitespace
        ("SEP = \u2018+\u2019", False),  # its quotes curly
        ("return a + b", True),  # a sign misremembered
        ("def parse(s):\nreturn a-b", True),  # spaces taken out: no editor puts them back
        ("     1\tdef parse(s):", False),  # the read's line number left on: there in what the read showed
        ("", False),
    ],
)
def test_a_text_is_absent_only_where_no_editor_finds_it_in_the_file_shown_whole(text: str, missing: bool) -> None:
    assert absent(text, SHOWN) is missing
