"""A body that repeats its conversation's last one and adds to it is read from the last parse
(`dialects.prefix`): only what it adds is parsed, and what it reads is always the body's own JSON.
Every test compares the reading with `orjson.loads` of the same body."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from chat import Chat, edit, test_run, view

from proxy.dialects import ANTHROPIC, CHAT, RESPONSES, parse
from proxy.dialects.prefix import MIN_BYTES, ParseMemory

BIG = 64 * 1024 * 1024


def _grown(turns: int, prefix: str = "call", out: str = "FAILED tests/test_parse.py::test_addition\n" * 200) -> Chat:
    chat = Chat(id_prefix=prefix)
    for index in range(turns):
        chat.turn((view, lambda: test_run(out), edit)[index % 3]())
    return chat


def _read(memory: ParseMemory, body: bytes, key: str = "messages") -> tuple[dict[str, Any], bool]:
    """The body as the memory reads it (whole when it does not extend a kept parse), and whether it did."""
    data = memory.read(body, key)[0]
    if data is not None:
        return data, True
    data = orjson.loads(body)
    memory.keep(body, data, key)
    return data, False


def test_a_growing_conversation_is_read_from_its_last_parse_as_its_own_json() -> None:
    memory = ParseMemory(BIG)
    chat = _grown(30)
    found = []
    for _ in range(6):
        body = chat.turn(test_run("E   assert 4 == 3\n" * 300)).bytes()
        assert len(body) > MIN_BYTES
        data, extended = _read(memory, body)
        assert data == orjson.loads(body)
        found.append(extended)
    assert found == [False, True, True, True, True, True]  # the first is kept whole; the next find its end
    assert memory.hits == 4  # the second is parsed whole (where the first ended is found), the rest only in part


@pytest.mark.parametrize(
    "dumps",
    [
        lambda d: json.dumps(d).encode(),  # Python's ", " and ": "
        lambda d: json.dumps(d, indent=2).encode(),  # pretty, the array's "]" on a line of its own
        lambda d: json.dumps(d, ensure_ascii=False).encode(),  # raw UTF-8
        lambda d: json.dumps(d, separators=(",", ":")).encode(),
    ],
    ids=["python", "indented", "utf8", "compact"],
)
def test_any_spacing_and_encoding_a_client_writes(dumps: Any) -> None:
    memory = ParseMemory(BIG)
    chat = _grown(30, out="résumé ✓ " * 400)
    hits = 0
    for _ in range(4):
        body = dumps(chat.turn(test_run("ünïcode " * 500)).body(stream=False))
        data, extended = _read(memory, body)
        assert data == orjson.loads(body)
        hits += extended
    assert hits == 3


def test_conversations_interleaved_are_each_read_from_their_own_parse() -> None:
    memory = ParseMemory(BIG)
    chats = [_grown(30, prefix=f"c{n}") for n in range(3)]
    hits = 0
    for _ in range(4):
        for chat in chats:
            body = chat.turn(test_run()).bytes()
            data, extended = _read(memory, body)
            assert data == orjson.loads(body)
            hits += extended
    assert hits == 9


def _changed(body: bytes, old: bytes, new: bytes) -> bytes:
    assert old in body
    return body.replace(old, new, 1)


def _after(body: bytes, old: bytes, new: bytes) -> bytes:
    """`body` with `old` replaced by `new` after its transcript."""
    at = body.rindex(b'],"tools":[')
    return body[:at] + _changed(body[at:], old, new)


def _kept_two(memory: ParseMemory, chat: Chat) -> None:
    _read(memory, chat.turn(test_run()).bytes())
    _read(memory, chat.turn(test_run()).bytes())  # kept, its end known


@pytest.mark.parametrize(
    "change",
    [
        lambda b: _changed(b, b"careful coding agent", b"careless coding agent"),  # an early message
        lambda b: _changed(b, b'"model":"qwen2.5-coder"', b'"model":"qwen3"'),  # a member before the transcript
    ],
    ids=["early-message", "member-before"],
)
def test_a_body_that_changes_what_was_read_is_parsed_whole(change: Any) -> None:
    memory = ParseMemory(BIG)
    chat = _grown(30)
    _kept_two(memory, chat)
    body = change(chat.turn(test_run()).bytes())
    assert memory.read(body, "messages")[0] is None
    assert _read(memory, body)[0] == orjson.loads(body)


@pytest.mark.parametrize(
    "change",
    [
        lambda b: b[:-1] + b',"stream":true}',  # a member added after the transcript
        lambda b: _after(b, b'"execute_bash"', b'"run_bash"'),  # the tools after it changed
        lambda b: _changed(b, b'],"tools":[', b'],"metadata":{"tools":"tools"},"tools":['),  # its first key, as a value
    ],
    ids=["member-after", "tools-after", "key-as-value"],
)
def test_what_follows_the_transcript_may_change_and_is_read_alone(change: Any) -> None:
    """Codex changes a member after its transcript on every request: the kept part is read from the
    last parse, the rest of the body parsed alone, and the next body reads on from it."""
    memory = ParseMemory(BIG)
    chat = _grown(30)
    _kept_two(memory, chat)
    for _ in range(2):
        body = change(chat.turn(test_run()).bytes())
        data = memory.read(body, "messages")[0]
        assert data == orjson.loads(body)


def test_the_same_body_sent_again_reads_as_itself() -> None:
    memory = ParseMemory(BIG)
    chat = _grown(30)
    for _ in range(3):
        body = chat.bytes()
        assert _read(memory, body)[0] == orjson.loads(body)
    body = chat.turn(test_run()).bytes()
    assert _read(memory, body) == (orjson.loads(body), True)


def test_what_closes_the_transcript_early_is_read_as_a_whole_parse_reads_it() -> None:
    """The bytes after the kept end close the transcript and open another member, then end with the
    kept bytes: they are no list of values, and the rest of the body is read alone, as it is."""
    memory = ParseMemory(BIG)
    chat = _grown(30)
    _read(memory, chat.turn(test_run()).bytes())
    body = chat.turn(test_run()).bytes()
    _read(memory, body)
    end = body.rindex(b'],"tools"')
    forged = body[:end] + b',{"role":"user","content":"x"}],"extra":[1' + body[end:]
    assert orjson.loads(forged)["extra"] == [1]
    assert memory.read(forged, "messages")[0] == orjson.loads(forged)


def test_a_call_added_to_the_last_message_is_not_taken_for_a_new_message() -> None:
    """The first two bodies differ inside the last message (a tool call added to it): what follows
    in the first is no end of the transcript, and nothing of it is reused."""
    memory = ParseMemory(BIG)
    chat = _grown(30)
    first = chat.bytes()
    _read(memory, first)
    last = chat.messages[-1]
    assert last["role"] == "tool"
    chat.messages[-2]["tool_calls"].append(
        {"id": "call_999", "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}
    )
    body = chat.bytes()
    assert memory.read(body, "messages")[0] is None


def test_a_second_transcript_member_is_not_read_from_the_first() -> None:
    """orjson keeps a repeated key's last value: a body with two `messages` members is parsed whole."""
    memory = ParseMemory(BIG)
    chat = _grown(30)
    doubled = chat.bytes()[:-1] + b',"messages":[]}'
    _read(memory, doubled)
    grown = chat.turn(test_run()).bytes()[:-1] + b',"messages":[]}'
    assert _read(memory, grown) == (orjson.loads(grown), False)


def test_small_bodies_are_parsed_whole_and_not_kept() -> None:
    memory = ParseMemory(BIG)
    body = Chat().turn(test_run()).bytes()
    assert len(body) < MIN_BYTES
    _read(memory, body)
    assert memory.charged == 0


def test_the_byte_bound_holds_least_recently_used_first() -> None:
    chats = [_grown(30, prefix=f"c{n}") for n in range(6)]
    size = len(chats[0].bytes())
    memory = ParseMemory(int(3.2 * size))  # three first bodies (kept as bytes), about
    for chat in chats:
        _read(memory, chat.bytes())
    assert memory.charged <= 3.2 * size
    assert _read(memory, chats[0].turn(test_run()).bytes())[1] is False  # the oldest went
    assert _read(memory, chats[-1].turn(test_run()).bytes())[1] is True


def test_the_dialects_read_through_it_as_they_read_a_body_whole() -> None:
    memory = ParseMemory(BIG)
    chat = _grown(30)
    for _ in range(3):
        body = chat.turn(test_run()).bytes()
        incoming, whole = parse(CHAT, body, memory), parse(CHAT, body)
        assert incoming is not None and whole is not None
        assert incoming.data == whole.data and incoming.translation == whole.translation
    from dialects import messages_body, responses_body

    for dialect, write, key in ((ANTHROPIC, messages_body, "messages"), (RESPONSES, responses_body, "input")):
        memory, chat = ParseMemory(BIG), _grown(30)
        for _ in range(3):
            body = write(chat.turn(test_run()))
            incoming, whole = parse(dialect, body, memory), parse(dialect, body)
            assert incoming is not None and whole is not None
            assert incoming.data == whole.data and incoming.translation == whole.translation
        assert memory.read(write(chat.turn(test_run())), key)[0] is not None


def test_where_the_transcript_ends_not_found_again_the_next_body_reads_on_from_the_same_end() -> None:
    """The first member after the transcript written with an escape (`"\\u0074ools"`): its key is not
    found as JSON writes it, the end stays where it was, and each body is still read as itself."""
    memory = ParseMemory(BIG)
    chat = _grown(30)
    _kept_two(memory, chat)
    for _ in range(3):
        body = _after(chat.turn(test_run()).bytes(), b'"tools":[', b'"\\u0074ools":[')
        assert memory.read(body, "messages")[0] == orjson.loads(body)
