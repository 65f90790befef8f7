from leap import is_leap


def test_ordinary_leap_year():
    assert is_leap(2024)


def test_century_is_not_leap():
    assert not is_leap(1900)


def test_fourth_century_is_leap():
    assert is_leap(2000)
