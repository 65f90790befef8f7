from countdown import countdown, launch_message


def test_counts_down_to_one():
    assert countdown(3) == [3, 2, 1]


def test_launch_message():
    assert launch_message(2) == "2, 1, lift-off!"
