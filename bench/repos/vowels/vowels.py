VOWELS = "aeio"


def count_vowels(text):
    """How many vowels `text` has, upper or lower case."""
    return sum(1 for ch in text.lower() if ch in VOWELS)
