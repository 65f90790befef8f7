from quota import Quota


def test_the_last_request_of_the_limit_is_allowed():
    q = Quota(limit=2)
    assert q.allow()
    assert q.allow()
    assert q.left() == 0


def test_past_the_limit_is_refused():
    q = Quota(limit=1)
    assert q.allow()
    assert not q.allow()
