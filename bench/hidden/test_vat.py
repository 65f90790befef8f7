"""Hidden checks of vat (never shown to the agent): value added tax at `rate` on top, the
standard rate (20%) unless another is given."""

from vat import with_vat


def test_the_standard_rate_on_other_prices() -> None:
    assert with_vat(50) == 60.0
    assert with_vat(19.99) == 23.99
    assert with_vat(0) == 0


def test_a_rate_given_is_the_rate_used() -> None:
    assert with_vat(100, rate=0.02) == 102.0
    assert with_vat(200, rate=0.1) == 220.0
