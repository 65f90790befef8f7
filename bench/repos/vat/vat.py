def with_vat(net, rate=0.02):
    """The gross price of `net`: value added tax at `rate` on top (the standard rate, 20%, unless given)."""
    return round(net * (1 + rate), 2)


def vat_of(net, rate=0.2):
    """The tax alone."""
    return round(net * rate, 2)
