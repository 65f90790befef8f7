"""What a request runs under: teams and their engines, the shared caches, TLS, the typed keys."""
