"""What a failure expects and what the code gives (`writing.expected`), the docstrings of the
lines to change, and the edits already made on a failure (`RepairState.tried`): what an edit
remedy says and what its held edit does not offer again (issue 61)."""

from __future__ import annotations

import pytest
from chat import Chat, edit, test_run, view
from scenario_loader import analyse, engine

from proxy.engine.reading.noop import undoing
from proxy.engine.reading.proposal import change_of
from proxy.engine.writing.expected import Expectation, Kind, documented, expectation
from proxy.engine.writing.pointed import tried_lines
from proxy.settings.kinds import CallKind

PYTEST_EQ = "E       assert 5 == 15\nE        +  where 5 = deposit(5)\nE        +    where deposit = <bank.Account object at 0x7f>.deposit\ntests/test_bank.py:6: AssertionError\nFAILED tests/test_bank.py::test_deposit - assert 5 == 15"  # fmt: skip
TEST_SOURCE = "     1\tfrom bank import Account\n     2\t\n     3\t\n     4\tdef test_deposit():\n     5\t    # the balance grows\n     6\t    assert Account(10).deposit(5) == 15\n"  # fmt: skip


@pytest.mark.parametrize(
    ("snippet", "source", "found"),
    [
        (PYTEST_EQ, None, Expectation("deposit(5)", "15", "5")),
        (PYTEST_EQ, TEST_SOURCE, Expectation("Account(10).deposit(5)", "15", "5")),
        (  # the expected value written first: the side that calls code is what the code gives
            "E       assert 15 == 5\nE        +  where 5 = deposit(5)\ntests/test_bank.py:6: AssertionError",
            TEST_SOURCE.replace("Account(10).deposit(5) == 15", "15 == Account(10).deposit(5), 'grows'"),
            Expectation("Account(10).deposit(5)", "15", "5"),
        ),
        (
            "E       assert [3, 2] == [3, 2, 1]\nE         Right contains one more item: 1\ntests/test_c.py:5: AssertionError",
            None,
            Expectation(None, "[3, 2, 1]", "[3, 2]"),
        ),
        (
            "E       assert not True\nE        +  where True = is_leap(1900)\ntests/test_leap.py:9: AssertionError",
            None,
            Expectation("is_leap(1900)", "false", "True", Kind.TRUTH),
        ),
        (
            "E       assert False\nE        +  where False = allow()",
            None,
            Expectation("allow()", "true", "False", Kind.TRUTH),
        ),
        (
            "E       Failed: DID NOT RAISE <class 'ValueError'>",
            None,
            Expectation(None, "ValueError", "nothing raised", Kind.RAISE),
        ),
        ("E       assert 3 < 2", None, Expectation(None, "3 < 2", "3 < 2", Kind.HOLD)),
        ("AssertionError: 1 != 2", None, Expectation(None, "2", "1")),  # unittest's assertEqual(first, second)
        ("    Expected: 3\n    Received: 2", None, Expectation(None, "3", "2")),  # jest
        # must not: a failure that shows no comparison has nothing expected in it
        ("E       TypeError: unsupported operand type(s) for +: 'int' and 'str'\ntests/t.py:3: TypeError", None, None),
        ("FAILED tests/test_x.py::test_y - ZeroDivisionError: division by zero", None, None),
        ("", None, None),
    ],
)
def test_what_a_failure_expects_and_what_the_code_gives(snippet: str, source: str | None, found: object) -> None:
    assert expectation(snippet, source) == found


def test_a_long_value_is_cut_and_a_truncated_one_taken_from_the_test_as_written() -> None:
    long = "E       assert " + "x" * 200 + " == 1\ntests/t.py:1: AssertionError"
    assert len(expectation(long).actual) == 80  # type: ignore[union-attr]
    cut = "E       assert ['1', 'Fizz', 'Buzz', 'Fizz'] == ['1', 'Fizz',...', 'FizzBuzz']\ntests/test_fizz.py:2: AssertionError"
    source = '     1\tdef test_fizz():\n     2\t    assert [fizzbuzz(i) for i in (1, 3, 5, 15)] == ["1", "Fizz", "Buzz", "FizzBuzz"]\n'  # fmt: skip
    assert expectation(cut, source) == Expectation(
        "[fizzbuzz(i) for i in (1, 3, 5, 15)]", '["1", "Fizz", "Buzz", "FizzBuzz"]', "['1', 'Fizz', 'Buzz', 'Fizz']"
    )


def test_the_docstrings_of_the_lines_to_change_those_the_failure_calls_first() -> None:
    lines = (
        'class Quota:\n    """A daily allowance."""\n\n    def allow(self):\n        """Count one request;\n'
        '        True when it is within the limit.\n\n        More.\n        """\n        return True\n\n'
        "    def left(self):\n        return 1\n\n    def used(\n        self,\n    ):\n        '''How many.'''\n"
    )
    assert documented(lines, ["used"]) == [
        ("used", "How many."),
        ("allow", "Count one request; True when it is within the limit."),
    ]
    assert documented("x = 1\n", []) == [] and documented(None) == []


def test_what_an_edit_changes_as_its_arguments_say() -> None:
    assert change_of({"old_str": "  a - b ", "new_str": "a + b\n"}, None) == ("a - b", "a + b")
    assert change_of({"command": "sed -i 's/a - b/a + b/' calc.py"}, "sed -i 's/a - b/a + b/' calc.py") == ("a - b", "a + b")  # fmt: skip
    assert change_of({"command": "create", "file_text": "x"}, None) is None


def test_the_lines_tried_are_each_side_of_an_edit_as_the_held_lines_are_indented() -> None:
    """What an edit took out and put in, context left out, each as the held lines are indented;
    none of the held lines themselves (a copy is refused by the same pattern already)."""
    tried = (("return list(range(start, 1, -1))", "numbers = range(start, 1, -1)\nreturn list(numbers)"),)
    held = ("    numbers = range(start, 1, -1)", "    return list(numbers)")
    assert tried_lines(tried, held) == ("    return list(range(start, 1, -1))",)
    assert tried_lines((("x = 1\ny = 2", "x = 1\ny = 3"),), ("  y = 3",)) == ("  y = 2",)
    assert tried_lines((), held) == ()


def test_an_undo_is_the_last_change_reversed_and_nothing_else() -> None:
    last = ("a + b + 1", "a + b + 2")
    undo = {"command": "str_replace", "path": "p.py", "old_str": "a + b + 2", "new_str": " a + b + 1"}
    found = undoing(CallKind.EDIT, undo, last)
    assert found is not None and found.undo and not found.copy
    assert undoing(CallKind.EDIT, {**undo, "new_str": "a + b"}, last) is None  # onwards
    assert undoing(CallKind.EDIT, undo, None) is None and undoing(CallKind.READ, undo, last) is None
    assert undoing(CallKind.EDIT, {"command": "sed -i 's/a + b + 2/a + b + 1/' p.py"}, last) is not None


def _tried(chat: Chat) -> tuple[tuple[str, str], ...]:
    planned = analyse(engine(), chat.bytes())
    assert planned is not None
    return planned.decision.state.repair.tried


def test_the_edits_tried_are_those_made_since_the_failure_first_appeared() -> None:
    """Kept while the failure stays the same, edits after it too; an edit the tool turned down is
    none; a new failure starts them again."""
    chat = Chat().turn(test_run()).turn(view()).turn(edit(old="a + b + 1", new="a + b + 2")).turn(test_run())
    chat.turn(("str_replace_editor", edit(old="zzz", new="y")[1], "ERROR:\nNo replacement was performed."))
    assert _tried(chat) == (("a + b + 1", "a + b + 2"),)
    chat.turn(edit(old="a + b + 2", new="a + b + 3"))
    assert _tried(chat) == (("a + b + 1", "a + b + 2"), ("a + b + 2", "a + b + 3"))
    assert _tried(chat.turn(test_run("@pytest_addition_other_value"))) == ()
