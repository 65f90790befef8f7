from vowels import count_vowels


def test_counts_every_vowel():
    assert count_vowels("Queue") == 4


def test_no_vowels():
    assert count_vowels("rhythm") == 0
