from kv import parse


def test_parse_two_pairs():
    assert parse("a=1;b=2") == {"a": "1", "b": "2"}
