from report import describe


def test_room_temperature():
    assert describe(20) == "68.0F"


def test_freezing():
    assert describe(0) == "32.0F"
