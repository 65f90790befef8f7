"""The upstream: sending to it, every way that fails, relaying its answer, the replies the proxy writes."""
