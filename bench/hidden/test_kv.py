"""Hidden checks of kv (never shown to the agent): 'a=1;b=2' -> {'a': '1', 'b': '2'}, for any
pairs separated by semicolons."""

from kv import parse


def test_one_pair() -> None:
    assert parse("x=10") == {"x": "10"}


def test_three_pairs() -> None:
    assert parse("a=1;b=2;c=3") == {"a": "1", "b": "2", "c": "3"}


def test_spaces_around_keys_and_values() -> None:
    assert parse(" k = v ; z=1") == {"k": "v", "z": "1"}
