"""Claude-Code-shaped Messages requests, turn by turn, as Claude Code 2.1 sends them (recorded from
`claude -p` 2.1.332 against a scripted server): `system` as text blocks (a billing line, the
identity with `cache_control`, the prompt), the first user message as `<system-reminder>` blocks
then the person's request, a `system` message with the environment right after it, its tools
(`Bash`, `Edit`, `Read`, `Write` with their real schemas), adaptive thinking, streamed; each turn
an assistant message of `tool_use` blocks and a user message of their `tool_result`s (a failing
command's `is_error`, "Exit code N" first), the `cache_control` marker moved to the newest block."""

from __future__ import annotations

import copy
from typing import Any

import orjson
from chat import output

SCHEMA = "https://json-schema.org/draft/2020-12/schema"
TOOLS: list[dict[str, Any]] = [
    {
        "name": "Bash",
        "description": "Executes a given bash command and returns its output.",
        "input_schema": {
            "$schema": SCHEMA,
            "type": "object",
            "properties": {
                "command": {"description": "The command to execute", "type": "string"},
                "timeout": {"description": "Optional timeout in milliseconds (max 600000)", "type": "number"},
                "description": {
                    "description": "Clear, concise description of what this command does",
                    "type": "string",
                },
                "run_in_background": {"description": "Run this command in the background", "type": "boolean"},
            },
            "required": ["command"],
            "additionalProperties": False,
        },
    },
    {
        "name": "Edit",
        "description": "Performs exact string replacements in files.",
        "input_schema": {
            "$schema": SCHEMA,
            "type": "object",
            "properties": {
                "file_path": {"description": "The absolute path to the file to modify", "type": "string"},
                "old_string": {"description": "The text to replace", "type": "string"},
                "new_string": {"description": "The text to replace it with", "type": "string"},
                "replace_all": {"description": "Replace all occurrences", "default": False, "type": "boolean"},
            },
            "required": ["file_path", "old_string", "new_string"],
            "additionalProperties": False,
        },
    },
    {
        "name": "Read",
        "description": "Reads a file from the local filesystem.",
        "input_schema": {
            "$schema": SCHEMA,
            "type": "object",
            "properties": {
                "file_path": {"description": "The absolute path to the file to read", "type": "string"},
                "offset": {"description": "The line number to start reading from", "type": "integer"},
                "limit": {"description": "The number of lines to read", "type": "integer"},
            },
            "required": ["file_path"],
            "additionalProperties": False,
        },
    },
    {
        "name": "Write",
        "description": "Writes a file to the local filesystem.",
        "input_schema": {
            "$schema": SCHEMA,
            "type": "object",
            "properties": {
                "file_path": {"description": "The absolute path to the file to write", "type": "string"},
                "content": {"description": "The content to write to the file", "type": "string"},
            },
            "required": ["file_path", "content"],
            "additionalProperties": False,
        },
    },
]
CACHED = {"type": "ephemeral"}
TASK = "The test tests/test_parse.py::test_addition fails. Fix it."


def reminder(text: str) -> dict[str, Any]:
    return {"type": "text", "text": f"<system-reminder>\n{text}\n</system-reminder>"}


class ClaudeCode:
    """A Claude Code conversation that grows one turn at a time; `bytes()` is the request so far."""

    def __init__(
        self, task: str = TASK, date: str = "2026-12-06", model: str = "qwen2.5-coder", prefix: str = "a"
    ) -> None:
        self.system = [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.0b9; cc_entrypoint=sdk-cli;"},
            {
                "type": "text",
                "text": "You are a Claude agent, built on Anthropic's Claude Agent SDK.",
                "cache_control": CACHED,
            },
            {"type": "text", "text": "\nYou are an agent working with the user toward their goals."},
        ]
        self.messages: list[dict[str, Any]] = [
            {
                "role": "user",
                "content": [
                    reminder("Attribution for git commits and pull requests you create from here on."),
                    reminder(f"Today's date is {date}."),
                    {"type": "text", "text": task, "cache_control": CACHED},
                ],
            },
            {
                "role": "system",
                "content": "# Environment\nYou have been invoked in the following environment:\n - Primary working directory: /workspace\n - Platform: linux",
            },
        ]
        self.model = model
        self.prefix = prefix
        self.calls = 0

    def _uncache(self) -> None:
        """Claude Code keeps one marker on the newest block: the last one's moves on."""
        for message in self.messages[2:]:
            if isinstance(message["content"], list):
                for block in message["content"]:
                    block.pop("cache_control", None)

    def turn(self, *calls: tuple[str, dict[str, Any], str, bool], text: str = "") -> ClaudeCode:
        """One assistant message with these (tool, input, output, failed) calls, then their results."""
        self._uncache()
        uses, results = [], []
        for name, arguments, out, failed in calls:
            self.calls += 1
            call_id = f"toolu_{self.prefix}{self.calls:03d}"
            uses.append({"type": "tool_use", "id": call_id, "name": name, "input": arguments})
            results.append({"type": "tool_result", "content": output(out), "is_error": failed, "tool_use_id": call_id})
        self.messages.append(
            {"role": "assistant", "content": ([{"type": "text", "text": text}] if text else []) + uses}
        )
        results[-1]["cache_control"] = CACHED
        self.messages.append({"role": "user", "content": results})
        return self

    def body(self, **extra: Any) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": copy.deepcopy(self.messages),
            "system": self.system,
            "tools": TOOLS,
            "metadata": {"user_id": '{"device_id":"4db4","account_uuid":"","session_id":"1499"}'},
            "max_tokens": 32000,
            "thinking": {"type": "adaptive", "display": "omitted"},
            "stream": True,
            **extra,
        }

    def bytes(self, **extra: Any) -> bytes:
        return orjson.dumps(self.body(**extra))


def pytest_run(out: str = "@pytest_addition_a") -> tuple[str, dict[str, Any], str, bool]:
    """Claude Code's Bash running the failing test: its output after "Exit code 1", an error."""
    return (
        "Bash",
        {"command": "cd /workspace && python -m pytest tests/test_parse.py", "description": "Run the tests"},
        "Exit code 1\n" + output(out),
        True,
    )


def edit(old: str = "a + b + 1", new: str = "a + b") -> tuple[str, dict[str, Any], str, bool]:
    path = "/workspace/src/parse.py"
    said = f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n     3→    return {new}"
    return ("Edit", {"file_path": path, "old_string": old, "new_string": new}, said, False)


def read(path: str = "/workspace/src/parse.py") -> tuple[str, dict[str, Any], str, bool]:
    content = "     1→def parse(s):\n     2→    a, b = s.split('+')\n     3→    return int(a) + int(b) + 1\n"
    return ("Read", {"file_path": path}, content, False)
