"""Hidden checks of calc (never shown to the agent): `add` is the sum of a and b, for any a and b."""

from calc import add


def test_add_other_numbers() -> None:
    assert add(10, 32) == 42
    assert add(3, 2) == 5


def test_add_zero_and_negatives() -> None:
    assert add(0, 0) == 0
    assert add(-2, 2) == 0
    assert add(-4, -6) == -10


def test_add_floats() -> None:
    assert add(1.5, 2.5) == 4.0
