"""Hidden checks of pages (never shown to the agent): how many pages `items` results fill,
`per_page` to a page, a part-filled page counted."""

from pages import page_count


def test_other_counts() -> None:
    assert page_count(1) == 1
    assert page_count(10) == 1
    assert page_count(21) == 3


def test_other_page_sizes() -> None:
    assert page_count(5, per_page=2) == 3
    assert page_count(4, per_page=2) == 2
    assert page_count(100, per_page=25) == 4
    assert page_count(3, per_page=3) == 1
