"""Reading streamed replies: the text so far, read after every piece, in each dialect."""

from __future__ import annotations

import orjson
import pytest
from replies import reply_bytes

from proxy.dialects import CHAT, OLLAMA, RESPONSES, Dialect

PIECES = ["{", '"name"', ": ", '"ls"', "}", "", " and then", " some prose ✓"]


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


@pytest.mark.parametrize("dialect", [CHAT, RESPONSES, OLLAMA], ids=lambda d: d.name)
def test_each_dialects_watcher_reads_crlf_line_ends_as_lf(dialect: Dialect) -> None:
    """A server ending its lines with CRLF, an end cut between the two: the same text and call."""
    call = [("bash", {"command": "ls -la"})]
    lf = b"".join(reply_bytes(dialect.name, "", call, stream=True)) + _chunk(dialect, "some prose")
    crlf = lf.replace(b"\n", b"\r\n")
    watchers = dialect.reply_watcher(), dialect.reply_watcher()
    watchers[0].feed(lf)
    for i in range(0, len(crlf), 3):
        watchers[1].feed(crlf[i : i + 3])
    assert watchers[1].view == watchers[0].view
    assert watchers[0].view.calls == ("bash",) and watchers[0].view.text.endswith("some prose")


def _split_chat_call(arguments: str) -> list[bytes]:
    """A chat call streamed as servers stream it: its name first, its arguments in pieces."""

    def chunk(call: dict[str, object]) -> bytes:
        delta = {"tool_calls": [{"index": 0, **call}]}
        return b"data: " + orjson.dumps({"choices": [{"index": 0, "delta": delta}]}) + b"\n\n"

    head = chunk({"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": ""}})
    return [head, *(chunk({"function": {"arguments": arguments[i : i + 5]}}) for i in range(0, len(arguments), 5))]


def test_the_chat_watcher_reads_a_calls_arguments_as_they_stream() -> None:
    """What the block gate reads: each call's arguments so far, whole at the end."""
    arguments = '{"command": "python -m pytest tests/test_calc.py"}'
    watcher = CHAT.reply_watcher()
    for n, chunk in enumerate(_split_chat_call(arguments)):
        watcher.feed(chunk)
        assert arguments.startswith(watcher.view.arguments[0])
        assert watcher.view.calls == ("bash",) and (n > 0 or watcher.view.arguments == ("",))
    assert watcher.view.arguments == (arguments,)


@pytest.mark.parametrize("dialect", [CHAT, RESPONSES, OLLAMA], ids=lambda d: d.name)
def test_each_dialect_reads_a_whole_or_streamed_calls_arguments(dialect: Dialect) -> None:
    call = [("bash", {"command": "ls -la"})]
    whole = dialect.read_reply(b"".join(reply_bytes(dialect.name, "", call)))
    assert whole is not None and whole.calls == ("bash",)
    assert [orjson.loads(a) for a in whole.arguments] == [{"command": "ls -la"}]
    watcher = dialect.reply_watcher()
    for chunk in reply_bytes(dialect.name, "", call, stream=True):
        watcher.feed(chunk)
    assert [orjson.loads(a) for a in watcher.view.arguments] == [{"command": "ls -la"}]


def test_a_chat_delta_with_a_tool_call_and_a_legacy_function_call_reads_each_its_own() -> None:
    """Each call is read by itself (`call_parts`): the legacy call at index 0 gets its own name and
    arguments, not the first tool call's again."""
    legacy = {"name": "old", "arguments": '{"x": 1}'}
    tool = {"index": 1, "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    delta = {"tool_calls": [tool], "function_call": legacy}
    watcher = CHAT.reply_watcher()
    watcher.feed(b"data: " + orjson.dumps({"choices": [{"index": 0, "delta": delta}]}) + b"\n\n")
    assert watcher.view.calls == ("old", "bash")
    assert watcher.view.arguments == ('{"x": 1}', '{"command": "ls"}')
