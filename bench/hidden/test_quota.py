"""Hidden checks of quota (never shown to the agent): `limit` requests are allowed, the last one
included, and none past it."""

from quota import Quota


def test_other_limits() -> None:
    for limit in (3, 5):
        q = Quota(limit=limit)
        assert all(q.allow() for _ in range(limit))
        assert not q.allow()
        assert q.left() == 0


def test_requests_past_the_limit_are_refused_and_not_counted() -> None:
    q = Quota(limit=4)
    assert sum(q.allow() for _ in range(6)) == 4
    assert q.left() == 0
