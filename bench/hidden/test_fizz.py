"""Hidden checks of fizz (never shown to the agent): multiples of 3 and 5 are FizzBuzz, of 3
alone Fizz, of 5 alone Buzz, any other number itself."""

from fizz import fizzbuzz


def test_other_multiples_of_fifteen() -> None:
    assert [fizzbuzz(n) for n in (30, 45, 90)] == ["FizzBuzz"] * 3


def test_other_numbers() -> None:
    assert [fizzbuzz(n) for n in (2, 6, 9, 10, 20, 7)] == ["2", "Fizz", "Fizz", "Buzz", "Buzz", "7"]
