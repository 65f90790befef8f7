"""Hidden checks of temps (never shown to the agent): a reading in Fahrenheit, one decimal; the
conversion itself, degrees Celsius in degrees Fahrenheit."""

from report import describe
from units import to_fahrenheit


def test_other_readings() -> None:
    assert describe(100) == "212.0F"
    assert describe(-40) == "-40.0F"
    assert describe(37) == "98.6F"


def test_the_conversion() -> None:
    assert to_fahrenheit(100) == 212
    assert to_fahrenheit(0) == 32
