from vat import vat_of, with_vat


def test_standard_rate():
    assert with_vat(100) == 120.0


def test_reduced_rate():
    assert with_vat(100, rate=0.05) == 105.0


def test_vat_of():
    assert vat_of(50) == 10.0
