from units import to_fahrenheit


def describe(celsius):
    """A reading as the report shows it: Fahrenheit, one decimal."""
    return f"{to_fahrenheit(celsius):.1f}F"
