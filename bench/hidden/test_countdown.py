"""Hidden checks of countdown (never shown to the agent): the numbers from `start` down to 1,
both ends included, for any start."""

from countdown import countdown, launch_message


def test_counts_down_from_other_starts() -> None:
    assert countdown(5) == [5, 4, 3, 2, 1]
    assert countdown(10) == list(range(10, 0, -1))


def test_one_and_nothing_to_count() -> None:
    assert countdown(1) == [1]
    assert countdown(0) == []


def test_launch_message_from_other_starts() -> None:
    assert launch_message(3) == "3, 2, 1, lift-off!"
    assert launch_message(1) == "1, lift-off!"
