"""Hidden checks of stack (never shown to the agent): pop returns the last item pushed."""

from stack import Stack


def test_three_items_pop_in_reverse() -> None:
    s = Stack()
    for item in (1, 2, 3):
        s.push(item)
    assert [s.pop(), s.pop(), s.pop()] == [3, 2, 1]
    assert len(s) == 0


def test_one_item() -> None:
    s = Stack()
    s.push("a")
    assert s.pop() == "a"


def test_push_after_pop() -> None:
    s = Stack()
    s.push(1)
    s.push(2)
    s.push(3)
    assert s.pop() == 3
    s.push(4)
    assert s.pop() == 4
    assert s.pop() == 2
