"""Reading streamed replies: the text so far, read after every piece, in each dialect."""

from __future__ import annotations

import orjson
import pytest

from proxy.dialects import CHAT, OLLAMA, RESPONSES, Dialect
from proxy.dialects.lines import TextSoFar

PIECES = ["{", '"name"', ": ", '"ls"', "}", "", " and then", " some prose ✓"]


def test_the_text_so_far_is_every_piece_in_order_however_often_it_is_read() -> None:
    text = TextSoFar()
    assert text.text == ""
    for n, piece in enumerate(PIECES):
        text.add(piece)
        if n % 3 != 1:  # read after some pieces, not others
            assert text.text == "".join(PIECES[: n + 1])
    assert text.text == "".join(PIECES)
    assert text.text == "".join(PIECES)  # a read changes nothing


def _chunk(dialect: Dialect, piece: str) -> bytes:
    if dialect is CHAT:
        return b"data: " + orjson.dumps({"choices": [{"index": 0, "delta": {"content": piece}}]}) + b"\n\n"
    if dialect is RESPONSES:
        return b"data: " + orjson.dumps({"type": "response.output_text.delta", "delta": piece}) + b"\n\n"
    return orjson.dumps({"message": {"role": "assistant", "content": piece}}) + b"\n"


@pytest.mark.parametrize("dialect", [CHAT, RESPONSES, OLLAMA], ids=lambda d: d.name)
def test_each_dialects_watcher_sees_the_text_so_far_after_every_chunk(dialect: Dialect) -> None:
    watcher = dialect.reply_watcher()
    for n, piece in enumerate(PIECES):
        watcher.feed(_chunk(dialect, piece))
        assert watcher.view.text == "".join(PIECES[: n + 1])
