from pages import page_count, page_of


def test_no_results_no_pages():
    assert page_count(0) == 0


def test_a_part_filled_page_counts():
    assert page_count(11) == 2


def test_full_pages_only():
    assert page_count(20) == 2


def test_page_of():
    assert page_of(10) == 2
