from stack import Stack


def test_pop_returns_the_last_pushed():
    s = Stack()
    s.push(1)
    s.push(2)
    assert s.pop() == 2
    assert len(s) == 1
