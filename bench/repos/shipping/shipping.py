FLAT_RATE = 4.99
FREE_FROM = 50


def shipping_cost(total):
    """What shipping costs on an order of `total`: free from FREE_FROM on, FLAT_RATE below it."""
    if total > FREE_FROM:
        return 0
    return FLAT_RATE


def order_total(subtotal):
    return round(subtotal + shipping_cost(subtotal), 2)
