"""The API dialects the proxy analyses, each only a translation to and from chat turns."""

from __future__ import annotations

from proxy.dialects.chat import CHAT
from proxy.dialects.ollama import OLLAMA
from proxy.dialects.responses import RESPONSES
from proxy.dialects.types import Dialect, Edit, Translation

__all__ = ["CHAT", "OLLAMA", "RESPONSES", "Dialect", "Edit", "Translation"]
