from shipping import order_total, shipping_cost


def test_small_orders_pay_the_flat_rate():
    assert shipping_cost(20) == 4.99


def test_an_order_of_exactly_fifty_ships_free():
    assert shipping_cost(50) == 0


def test_order_total():
    assert order_total(10) == 14.99
