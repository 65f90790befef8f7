"""Hidden checks of slug (never shown to the agent): 'Hello World!' -> 'hello-world', for any title."""

from slug import slugify


def test_other_titles_are_lowercased() -> None:
    assert slugify("Python IS Fun") == "python-is-fun"
    assert slugify("ABC") == "abc"


def test_other_separators() -> None:
    assert slugify("  many   spaces  ") == "many-spaces"
    assert slugify("C3PO & R2D2") == "c3po-r2d2"
