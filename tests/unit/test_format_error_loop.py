"""The format-error loop in each shape agents send it: the bad replies kept in the history
(mini-swe-agent 1.x), dropped with only the complaints kept (mini-swe-agent 2.x with tool
calls), or asked again with only the newest bad reply and complaint (SWE-agent's requery). The
third complaint in a row is seen (silent: at three the agent's own next reply was often valid), the
fourth confirms it and the reply to it is made to act: a tool agent's request requires a call; a
text agent's reply that again writes no command is held and asked again."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from scenario_loader import acting, analyse

from proxy.engine.core import Engine
from proxy.engine.plan.reply import Gate, ReplyView, judge
from proxy.settings.policy import load_policy

TASK = "Fix the bug described in the issue."
MINI_1 = "Please always provide EXACTLY ONE action in triple backticks, found {n} actions."
MINI_2 = "Tool call error:\n\n<error>\nNo tool calls found in the response. Every response MUST include a tool call.\n</error>"
SWE_1 = (
    "Your last output did not use any tool calls!\nPlease make sure your output includes exactly _ONE_ function call!"
)
BASH = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    }
]


def _start(text_protocol: bool) -> list[dict[str, Any]]:
    if text_protocol:
        return [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": TASK},
            {"role": "assistant", "content": "THOUGHT: look first.\n\n```bash\nls\n```"},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\nsrc\n</output>"},
        ]
    call = {"id": "call_a1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": TASK},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_a1", "content": "<returncode>0</returncode>\n<output>\nsrc\n</output>"},
    ]


def kept(n: int) -> list[list[dict[str, Any]]]:
    """mini-swe-agent 1.x: every bad reply and its complaint stay in the history."""
    messages, out = _start(True), []
    for k in range(n):
        messages = [*messages, {"role": "assistant", "content": f"I will now look at file {k}."}]
        messages = [*messages, {"role": "user", "content": MINI_1.format(n=0)}]
        out.append(messages)
    return out


def dropped(n: int) -> list[list[dict[str, Any]]]:
    """mini-swe-agent 2.x: the bad reply is never kept, only its complaint."""
    messages, out = _start(False), []
    for _ in range(n):
        messages = [*messages, {"role": "user", "content": MINI_2}]
        out.append(messages)
    return out


def requeried(n: int) -> list[list[dict[str, Any]]]:
    """SWE-agent: each retry sends the history with only the newest bad reply and complaint."""
    start = _start(False)
    return [
        [*start, {"role": "assistant", "content": f"Let me think ({k})."}, {"role": "user", "content": SWE_1}]
        for k in range(n)
    ]


SHAPES = {
    "kept (mini-swe-agent 1.x)": kept,
    "dropped (mini-swe-agent 2.x)": dropped,
    "requeried (SWE-agent)": requeried,
}


def plans(requests: list[list[dict[str, Any]]], tools: bool, *, shipped: bool = False) -> list[Any]:
    """Each request's decision, the pattern acting (its default is shadow), or as it ships."""
    engine = Engine.of(load_policy("default") if shipped else acting("format_error_loop"))
    out = []
    for messages in requests:
        body: dict[str, Any] = {"model": "m", "messages": messages}
        if tools:
            body["tools"] = BASH
        planned = analyse(engine, orjson.dumps(body))
        assert planned is not None
        out.append(planned.decision)
    return out


@pytest.mark.parametrize("shape", SHAPES)
def test_the_third_complaint_in_a_row_is_seen_and_the_fourth_trips_in_every_shape(shape: str) -> None:
    decisions = plans(SHAPES[shape](4), tools=shape != "kept (mini-swe-agent 1.x)")
    trips = [[(t.pattern.name, t.action.value) for t in d.new_trips] for d in decisions]
    said = "nudge" if shape == "kept (mini-swe-agent 1.x)" else "force"  # a text agent has no tool to pin
    assert trips == [[], [], [("format_error_loop", "observe")], [("format_error_loop", said)]]
    assert not decisions[2].placed and decisions[3].placed


@pytest.mark.parametrize("shape", SHAPES)
def test_two_complaints_do_not_trip(shape: str) -> None:
    decisions = plans(SHAPES[shape](2), tools=shape != "kept (mini-swe-agent 1.x)")
    assert all(not d.new_trips for d in decisions)


def test_a_tool_agents_request_after_the_fourth_complaint_requires_its_call() -> None:
    """One tool: it is pinned, with its schema as structured output for servers that ignore
    `tool_choice`; the directive quotes the agent's complaint."""
    decision = plans(dropped(4), tools=True)[-1]
    assert decision.edit is not None and decision.edit.tool_choice == "bash"
    assert decision.edit.call_schema is not None
    assert "No tool calls found" in decision.placed[-1].text


def test_a_text_agents_reply_without_a_command_is_asked_again_and_one_with_a_command_passes() -> None:
    decision = plans(kept(4), tools=False)[-1]
    rules = decision.reply
    assert Gate.ACTION in rules.gates
    assert judge(ReplyView("I apologise, I will do better."), rules).gate is Gate.ACTION
    assert judge(ReplyView("THOUGHT: read it.\n\n```bash\ncat src/calc.py\n```"), rules).gate is None
    assert "```bash" in decision.placed[-1].text


def _kept_with(reply: str) -> list[list[dict[str, Any]]]:
    """mini-swe-agent 1.x, each refused reply being `reply`."""
    messages, out = _start(True), []
    for _ in range(4):
        messages = [*messages, {"role": "assistant", "content": reply}]
        messages = [*messages, {"role": "user", "content": MINI_1.format(n=0)}]
        out.append(messages)
    return out


GLUED = "THOUGHT: patch it.\n\n```bash\npython - <<'PY'\nprint('patched')\nPY```"
UNCLOSED = "THOUGHT: patch it.\n\n```bash\npython - <<'PY'\nprint('patched')\nPY\n"


@pytest.mark.parametrize(
    ("reply", "named"),
    [
        (GLUED, "Your last reply put its closing ``` on the same line as `PY`: put it on a line of its own."),
        (UNCLOSED, "Your last reply opened a ``` block and never closed it"),
    ],
)
def test_the_nudge_names_the_slip_the_refused_reply_shows(reply: str, named: str) -> None:
    """The agent's parser wants the closing fence on a line of its own (corpus, mini-swe-agent
    1.x with gpt-5-nano: `PY```` and unclosed heredocs, refused with "found 0 actions" turn
    after turn): the nudge says which slip it was."""
    assert named in plans(_kept_with(reply), tools=False)[-1].placed[-1].text


def test_a_refused_reply_with_no_fenced_block_gets_no_slip_named() -> None:
    """Prose with no fence: nothing to name but the format asked for."""
    text = plans(kept(4), tools=False)[-1].placed[-1].text
    assert "Your last reply" not in text and "Reply with" in text


NOT_PRECISE = "The buggy locations is not precise. You may need to check whether the arguments are correct."
"""An agent's own words after each reply it could not use, in no phrasing `text.nudges` knows."""


def _same_words_after_replies(first_call: bool) -> list[list[dict[str, Any]]]:
    """Three prose replies, each answered with the same words: after a tool call of the model's
    (`first_call`), or in a conversation where no call was ever read (AutoCodeRover's shape)."""
    messages = _start(text_protocol=False) if first_call else [{"role": "system", "content": "You are a locator."}]
    messages = [*messages, {"role": "user", "content": TASK}] if not first_call else messages
    out = []
    for n in range(3):
        messages = [*messages, {"role": "assistant", "content": f"The bug is in parse.py, I think ({n})."}]
        messages = [*messages, {"role": "user", "content": NOT_PRECISE}]
        out.append(messages)
    return out


def test_the_same_words_after_three_call_less_replies_trip_where_a_call_was_read() -> None:
    decisions = plans(_same_words_after_replies(first_call=True), tools=True)
    assert "format_error_loop" in [t.pattern.name for t in decisions[-1].new_trips]  # monologue (shadow) too


def test_the_same_words_where_no_call_was_ever_read_do_not_trip() -> None:
    """Corpus test part, AutoCodeRover: no tools, calls in a format we do not read; its repeated
    words were about the answer's content, and there was no call to ask for."""
    decisions = plans(_same_words_after_replies(first_call=False), tools=False)
    assert all("format_error_loop" not in [t.pattern.name for t in d.new_trips] for d in decisions)


MISSING = "Missing required parameters for function 'bash': {'timeout'}\n[Error occurred in processing last action]"
"""OpenHands 1.0 (mock function calling, corpus test part): its rejection of a call that failed its
validation, sent in place of the reply it dropped, in no phrasing `text.nudges` knows."""


def rejected_one_per_request(n: int, *, replies_kept: bool) -> list[list[dict[str, Any]]]:
    """Each request adds the agent's rejection (and, `replies_kept`, first a valid call and its
    result): the proxy reads only what is new in each."""
    messages, out = _start(False), []
    for k in range(n):
        if replies_kept:
            call = {
                "id": f"call_k{k}",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"command": "pwd"}'},
            }
            messages = [*messages, {"role": "assistant", "content": "", "tool_calls": [call]}]
            messages = [*messages, {"role": "tool", "tool_call_id": f"call_k{k}", "content": "/repo"}]
        messages = [*messages, {"role": "user", "content": MISSING}]
        out.append(messages)
    return out


def test_rejections_sent_one_per_request_in_place_of_dropped_replies_trip_at_the_third() -> None:
    """Read whole, the three are a loop; read as the proxy reads them, one new message per request,
    the first of each request's new messages was taken for the start of the conversation (nothing
    before it), not for a message in place of a reply, and the count never passed one."""
    decisions = plans(rejected_one_per_request(3, replies_kept=False), tools=True)
    assert [[t.pattern.name for t in d.new_trips] for d in decisions] == [[], [], ["format_error_loop"]]


def test_rejections_each_after_a_call_the_agent_ran_do_not_trip() -> None:
    decisions = plans(rejected_one_per_request(3, replies_kept=True), tools=True)
    assert all("format_error_loop" not in [t.pattern.name for t in d.new_trips] for d in decisions)


def test_after_calls_turned_down_for_their_arguments_the_instruction_shows_no_example_without_them() -> None:
    text = plans(rejected_one_per_request(4, replies_kept=False), tools=True)[-1].placed[-1].text
    assert "{'timeout'}" in text and "every argument the agent says it needs" in text
    assert "For example" not in text


def test_after_replies_with_no_call_the_instruction_shows_an_example_call() -> None:
    text = plans(dropped(4), tools=True)[-1].placed[-1].text
    assert 'For example: call bash with {"command":"ls"}' in text and "every argument" not in text


def test_as_shipped_the_third_complaint_trips_in_shadow_and_changes_nothing() -> None:
    decision = plans(dropped(3), tools=True, shipped=True)[-1]
    assert [(t.pattern.name, t.shadow) for t in decision.new_trips] == [("format_error_loop", True)]
    assert decision.edit is None and not decision.placed
