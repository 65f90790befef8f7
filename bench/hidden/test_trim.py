"""Hidden checks of trim (never shown to the agent): `text` as it is when it fits in `width`
characters, else cut to fit with ELLIPSIS at the end."""

from trim import shorten


def test_text_that_fits_exactly_is_kept() -> None:
    assert shorten("abcdefghijkl") == "abcdefghijkl"
    assert shorten("abcdef", width=6) == "abcdef"


def test_text_one_longer_is_cut() -> None:
    assert shorten("abcdefghijklm") == "abcdefghi..."
    assert shorten("abcdefg", width=6) == "abc..."


def test_other_widths() -> None:
    assert shorten("abcdefgh", width=6) == "abc..."
    assert len(shorten("x" * 40, width=20)) == 20
