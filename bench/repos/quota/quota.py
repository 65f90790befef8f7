class Quota:
    """A daily allowance of requests: `limit` of them, the last one included."""

    def __init__(self, limit=100):
        self.limit = limit
        self.used = 0

    def allow(self):
        """Count one request; True when it is within the limit."""
        if self.used + 1 < self.limit:
            self.used += 1
            return True
        return False

    def left(self):
        return self.limit - self.used
