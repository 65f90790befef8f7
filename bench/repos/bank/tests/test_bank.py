import pytest
from bank import Account


def test_deposit_adds_to_the_balance():
    assert Account(10).deposit(5) == 15


def test_withdraw_takes_from_the_balance():
    assert Account(10).withdraw(3) == 7


def test_withdraw_more_than_the_balance_is_refused():
    with pytest.raises(ValueError):
        Account(10).withdraw(11)
