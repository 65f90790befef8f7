"""Hidden checks of vowels (never shown to the agent): how many vowels `text` has, upper or lower case."""

from vowels import count_vowels


def test_upper_case_vowels() -> None:
    assert count_vowels("UNDER") == 2
    assert count_vowels("AEIOU") == 5


def test_other_words() -> None:
    assert count_vowels("umbrella") == 3
    assert count_vowels("uuu") == 3
    assert count_vowels("Sky") == 0
    assert count_vowels("") == 0
