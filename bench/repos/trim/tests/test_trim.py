from trim import shorten


def test_short_text_is_kept():
    assert shorten("hello") == "hello"


def test_text_that_fits_exactly_is_kept():
    assert shorten("hello", width=5) == "hello"


def test_long_text_is_cut():
    assert shorten("hello wonderful world", width=10) == "hello w..."
