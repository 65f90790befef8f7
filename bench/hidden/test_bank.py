"""Hidden checks of bank (never shown to the agent): deposits add, withdrawals take away, a
withdrawal of more than the balance is refused and leaves it as it was."""

import pytest
from bank import Account


def test_deposits_of_other_amounts_add() -> None:
    assert Account(0).deposit(7) == 7
    assert Account(100).deposit(1) == 101


def test_withdrawals_of_other_amounts_take_away() -> None:
    assert Account(100).withdraw(40) == 60
    assert Account(8).withdraw(8) == 0


def test_a_refused_withdrawal_leaves_the_balance() -> None:
    account = Account(3)
    with pytest.raises(ValueError):
        account.withdraw(4)
    assert account.deposit(1) == 4


def test_one_account_over_several_operations() -> None:
    account = Account(5)
    assert account.deposit(10) == 15
    assert account.withdraw(15) == 0
    assert account.deposit(2) == 2
