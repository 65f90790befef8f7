"""Hidden checks of shipping (never shown to the agent): free from FREE_FROM on, FLAT_RATE below it."""

from shipping import order_total, shipping_cost


def test_just_below_the_threshold_pays() -> None:
    assert shipping_cost(49.99) == 4.99
    assert shipping_cost(49.5) == 4.99


def test_at_and_above_the_threshold_ships_free() -> None:
    assert shipping_cost(50.0) == 0
    assert shipping_cost(120) == 0


def test_other_totals() -> None:
    assert order_total(50) == 50
    assert order_total(49) == 53.99
