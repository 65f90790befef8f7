"""repair-proxy: a transparent OpenAI-compatible proxy that unsticks agents."""

from proxy.app import make_app
from proxy.config import Settings, load_settings
from proxy.engine import Engine
from proxy.policy import Policy, load_policy

__all__ = ["Engine", "Policy", "Settings", "load_policy", "load_settings", "make_app"]
