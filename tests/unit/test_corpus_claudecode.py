"""The corpus converter's Claude Code source (`bench/corpus/convert.py`, `claudecode_run`): the requests
Claude Code sent, rebuilt from a made-up session log in its shape (one line per content block, the
lines of one response sharing `message.id`, tool results as user lines, a sub-agent's side-chain, a
session title, thinking blocks, Claude Code's own API-error notes)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "corpus"))

import convert

from proxy.engine.text.roles import told_not_to_edit

TASK = "Fix this issue: the parser drops the last line. After fixing, run the tests to verify."
INVALID = "<tool_use_error>InputValidationError: Edit failed due to the following issue:\nThe required parameter `old_string` is missing</tool_use_error>"
REFUSED = "<tool_use_error>String to replace not found in file.\nString: x = 1</tool_use_error>"


class Log:
    """A session log being written: each line chained to the one before (`parentUuid`)."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = [{"type": "summary", "summary": "Parser fix", "leafUuid": "elsewhere"}]
        self.last: str | None = None

    def _add(self, kind: str, message: dict[str, Any], **extra: Any) -> None:
        uuid = f"u{len(self.lines)}"
        side = extra.pop("isSidechain", False)
        self.lines.append(
            {
                "parentUuid": None if side else self.last,
                "isSidechain": side,
                "type": kind,
                "message": message,
                "uuid": uuid,
                "version": "2.0.0",
                **extra,
            }
        )
        if not side:
            self.last = uuid

    def user(self, content: Any, **extra: Any) -> None:
        self._add("user", {"role": "user", "content": content}, **extra)

    def block(self, message_id: str, block: dict[str, Any], **extra: Any) -> None:
        model = extra.pop("model", "glm-local")
        self._add("assistant", {"id": message_id, "role": "assistant", "model": model, "content": [block]}, **extra)

    def result(self, call_id: str, content: Any, is_error: bool | None = None) -> None:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
        if is_error is not None:
            block["is_error"] = is_error
        self.user([block], toolUseResult="(what the terminal showed)")


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def thinking(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": "sig"}


def a_session() -> Log:
    log = Log()
    log.user(TASK)
    log.block("msg_1", thinking("Let me look around."))
    log.block("msg_1", {"type": "text", "text": "I'll find the parser first."})
    log.block("msg_1", call("toolu_a", "Bash", command="pytest -q"))
    log.block("msg_1", call("toolu_b", "Read", file_path="/testbed/parser.py"))
    log.result("toolu_b", "     1\tdef parse(text):")  # answered out of order
    log.result("toolu_a", "1 failed", is_error=True)
    log.user("Find the callers of parse", isSidechain=True)  # a Task sub-agent's own conversation
    log.block("msg_side", call("toolu_s", "Grep", pattern="parse("), isSidechain=True)
    log.block("msg_2", call("toolu_c", "Edit", file_path="/testbed/parser.py"))
    log.result("toolu_c", INVALID, is_error=True)
    log.block("msg_3", call("toolu_d", "Edit", file_path="/testbed/parser.py", old_string="x = 1", new_string="x = 2"))
    log.result("toolu_d", REFUSED, is_error=True)
    log.block("msg_4", call("toolu_e", "Bash", command="pytest -q"))
    log.result("toolu_e", [{"type": "text", "text": "3 passed"}, {"type": "image", "source": {}}])
    log.block("msg_5", thinking("All green, done."))
    return log


def messages(record: dict[str, Any], k: int) -> list[dict[str, Any]]:
    return [record["pool"][i] for i in record["requests"][k]["messages"]]


def reply(record: dict[str, Any], k: int) -> dict[str, Any] | None:
    at = record["requests"][k]["reply"]
    return None if at is None else record["pool"][at]


def test_one_request_per_response_with_its_lines_merged_and_the_answering_results_after_it() -> None:
    record = convert.claudecode_run("org__repo-1", a_session().lines).record()
    assert record["model"] == "glm-local" and record["resolved"] is None and record["protocol"] == "tools"
    assert record["part"] == "tune"  # set by main() from the source's origin ("test")
    assert len(record["requests"]) == 5  # msg_1 .. msg_5; the side-chain's response is not one of them
    system, task = messages(record, 0)
    assert system == {"role": "system", "content": convert.CC_SYSTEM}
    assert task == {"role": "user", "content": TASK}
    first = reply(record, 0)
    assert first is not None
    assert first["content"] == "I'll find the parser first."  # thinking dropped
    assert [c["id"] for c in first["tool_calls"]] == ["toolu_a", "toolu_b"]
    assert first["tool_calls"][1]["function"] == {"name": "Read", "arguments": '{"file_path":"/testbed/parser.py"}'}
    assert messages(record, 1) == [
        system,
        task,
        first,
        {"role": "tool", "tool_call_id": "toolu_b", "content": "     1\tdef parse(text):"},
        {"role": "tool", "tool_call_id": "toolu_a", "content": "1 failed", "is_error": True},
    ]
    for k in range(1, 5):  # each request is the one before, its reply and that reply's results
        before = record["requests"][k - 1]
        assert record["requests"][k]["messages"][: len(before["messages"]) + 1] == [
            *before["messages"],
            before["reply"],
        ]
    assert messages(record, 4)[-1] == {"role": "tool", "tool_call_id": "toolu_e", "content": "3 passed"}
    assert reply(record, 4) == {"role": "assistant", "content": None}  # only thinking: empty without it
    assert record["tools"] == convert.CC_TOOLS
    assert "Grep" not in {c["function"]["name"] for m in record["pool"] for c in m.get("tool_calls") or []}


def test_the_invalid_calls_result_is_a_complaint_and_a_tools_own_refusal_is_not() -> None:
    builder = convert.claudecode_run("org__repo-1", a_session().lines)
    record = builder.record()
    marked = [record["pool"][i] for i in record["complaints"]]
    assert marked == [{"role": "tool", "tool_call_id": "toolu_c", "content": INVALID, "is_error": True}]
    assert builder.format_errors == 1


def test_what_was_skipped_and_lost_is_in_the_notes() -> None:
    notes = convert.claudecode_run("org__repo-1", a_session().lines).record()["notes"]
    assert "1 summary lines (session titles)" in notes
    assert "2 side-chain lines (a Task sub-agent's own conversation)" in notes
    assert "2 thinking blocks dropped" in notes
    assert "1 replies empty without their thinking" in notes
    assert "1 result images dropped" in notes
    assert "parentUuid" not in notes  # the main chain is unbroken (side-chain lines have their own)


def test_an_api_error_after_the_results_is_a_request_without_a_reply() -> None:
    log = Log()
    log.user(TASK)
    log.block("msg_1", call("toolu_a", "Bash", command="ls"))
    log.result("toolu_a", "parser.py")
    log.block("e1", {"type": "text", "text": "API Error: 400"}, model="<synthetic>", isApiErrorMessage=True)
    record = convert.claudecode_run("org__repo-2", log.lines).record()
    assert len(record["requests"]) == 2 and record["requests"][1]["reply"] is None
    assert messages(record, 1)[-1] == {"role": "tool", "tool_call_id": "toolu_a", "content": "parser.py"}
    assert record["model"] == "glm-local"
    assert "1 requests answered by an API error (reply null)" in record["notes"]


def test_an_api_error_note_after_a_reply_sends_nothing() -> None:
    log = Log()
    log.user(TASK)
    log.block("msg_1", call("toolu_a", "Bash", command="ls"))
    log.result("toolu_a", "parser.py")
    log.block("msg_2", thinking("A very long thought cut at max_tokens"))
    log.block("e1", {"type": "text", "text": "API Error: too long"}, model="<synthetic>", isApiErrorMessage=True)
    record = convert.claudecode_run("org__repo-3", log.lines).record()
    assert len(record["requests"]) == 2 and all(r["reply"] is not None for r in record["requests"])
    assert "1 API-error notes after a reply (nothing sent)" in record["notes"]


def test_the_placeholder_system_prompt_reads_as_no_role_limit() -> None:
    """The proxy reads a system prompt only for a role told not to edit the code: the placeholder
    changes no reading (a request without it reads the same)."""
    assert not told_not_to_edit([{"role": "system", "content": convert.CC_SYSTEM}, {"role": "user", "content": TASK}])


def test_the_reconstructed_tools_are_claude_code_2_0s_and_well_formed() -> None:
    names = [t["function"]["name"] for t in convert.CC_TOOLS]
    assert names == [
        "Task",
        "Bash",
        "Glob",
        "Grep",
        "ExitPlanMode",
        "Read",
        "Edit",
        "Write",
        "NotebookEdit",
        "WebFetch",
        "TodoWrite",
        "WebSearch",
        "BashOutput",
        "KillShell",
        "SlashCommand",
    ]
    for tool in convert.CC_TOOLS:
        params = tool["function"]["parameters"]
        assert params["type"] == "object" and set(params["required"]) <= set(params["properties"])
