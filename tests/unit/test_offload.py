"""Where a request is analysed (`pipeline.offload`), as a table: on the event loop, or in a worker
thread when its body is large or the text after the model's last reply is (issue #52: a 61 KB
body with one 60,000-character tool output was read on the loop, /healthz waiting through it)."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.http.pipeline.offload import FRESH_CHARS, OFFLOAD_BYTES, fresh_chars, in_thread

CALL = {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function"}]}


def _tool(chars: int) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": "c", "content": "x" * chars}


@pytest.mark.parametrize(
    ("messages", "fresh"),
    [
        pytest.param([{"role": "user", "content": "fix it"}], 6, id="nothing replied yet: the task"),
        pytest.param([{"role": "user", "content": "fix it"}, CALL, _tool(70_000)], 70_000, id="the newest output"),
        pytest.param([_tool(70_000), CALL, _tool(10)], 10, id="an output before the last reply is not new"),
        pytest.param(
            [CALL, _tool(100), {"role": "user", "content": [{"type": "text", "text": "y" * 50}]}],
            150,
            id="results and a user message in parts",
        ),
        pytest.param([CALL, {"role": "tool", "content": None}, "not a message"], 0, id="no text"),
    ],
)
def test_the_fresh_text_is_what_follows_the_last_reply(messages: list[Any], fresh: int) -> None:
    assert fresh_chars(messages) == fresh


@pytest.mark.parametrize(
    ("size", "fresh", "thread"),
    [
        (OFFLOAD_BYTES, None, True),  # a large body: parsed in the thread too
        (OFFLOAD_BYTES - 1, None, False),  # small, not read yet: parsed on the loop
        (OFFLOAD_BYTES - 1, FRESH_CHARS, True),  # small, its newest output long
        (OFFLOAD_BYTES - 1, FRESH_CHARS - 1, False),  # small and little new: the hand-off would cost more
        (70_000, 60_000, True),
        (2_000, 500, False),
    ],
)
def test_a_large_body_or_a_long_newest_text_is_analysed_off_the_loop(
    size: int, fresh: int | None, thread: bool
) -> None:
    assert in_thread(size, fresh) is thread
