def countdown(start):
    """The numbers from `start` down to 1, both ends included."""
    return list(range(start, 1, -1))


def launch_message(start):
    return ", ".join(str(n) for n in countdown(start)) + ", lift-off!"
