def is_leap(year):
    """Gregorian leap years."""
    return year % 4 == 0
