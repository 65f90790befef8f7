"""Hidden checks of leap (never shown to the agent): Gregorian leap years, every fourth year
but centuries, every fourth century."""

from leap import is_leap


def test_other_centuries_are_not_leap() -> None:
    assert not is_leap(2100)
    assert not is_leap(1800)


def test_other_fourth_centuries_are_leap() -> None:
    assert is_leap(1600)
    assert is_leap(2400)


def test_other_years() -> None:
    assert is_leap(1996)
    assert not is_leap(2023)
    assert not is_leap(1901)
