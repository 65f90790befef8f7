"""Building realistic chat transcripts, turn by turn, as an agent would send them."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson

OUTPUTS = Path(__file__).parent / "scenarios" / "outputs"

OPENHANDS_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "execute_bash",
            "description": "Execute a bash command in the terminal.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "str_replace_editor",
            "description": "View, create and edit files.",
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert", "undo_edit"]},
                    "path": {"type": "string"},
                    "old_str": {"type": "string"},
                    "new_str": {"type": "string"},
                    "file_text": {"type": "string"},
                    "view_range": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["command", "path"],
            },
        },
    },
]


def tool_schemas(names: list[str]) -> list[dict[str, Any]]:
    """Minimal function schemas for tools named in a scenario."""
    return [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}} for n in names
    ]


def output(text: str) -> str:
    """`@name` is the file tests/scenarios/outputs/name.txt; anything else is itself."""
    return (OUTPUTS / f"{text[1:]}.txt").read_text() if text.startswith("@") else text


class Chat:
    """A conversation that grows one turn at a time; `body()` is the request carrying it so far."""

    def __init__(
        self,
        system: str = "You are a careful coding agent working in /workspace.",
        user: str = "The test tests/test_parse.py::test_addition fails. Fix it.",
        tools: list[dict[str, Any]] | None = None,
        model: str = "qwen2.5-coder",
        id_prefix: str = "call",
    ) -> None:
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        self.tools = OPENHANDS_TOOLS if tools is None else tools
        self.model = model
        self.calls = 0
        self.prefix = id_prefix

    def turn(self, *calls: tuple[str, dict[str, Any], str], text: str | None = None) -> Chat:
        """One assistant message with these (tool, arguments, output) calls and their results."""
        ids = []
        tool_calls = []
        for name, arguments, _ in calls:
            self.calls += 1
            ids.append(f"{self.prefix}_{self.calls:03d}")
            tool_calls.append(
                {
                    "id": ids[-1],
                    "type": "function",
                    "function": {"name": name, "arguments": orjson.dumps(arguments).decode()},
                }
            )
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if tool_calls:
            message["tool_calls"] = tool_calls
        self.messages.append(message)
        for call_id, (_, _, out) in zip(ids, calls, strict=True):
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": output(out)})
        return self

    def say(self, text: str) -> Chat:
        """A text-only assistant reply."""
        self.messages.append({"role": "assistant", "content": text})
        return self

    def user(self, text: str) -> Chat:
        self.messages.append({"role": "user", "content": text})
        return self

    def body(self, **extra: Any) -> dict[str, Any]:
        return {"model": self.model, "messages": copy.deepcopy(self.messages), "tools": self.tools, **extra}

    def bytes(self, **extra: Any) -> bytes:
        return orjson.dumps(self.body(**extra))


def bash(command: str, out: str) -> tuple[str, dict[str, Any], str]:
    return ("execute_bash", {"command": command}, out)


def test_run(out: str = "@pytest_addition_a") -> tuple[str, dict[str, Any], str]:
    return bash("cd /workspace && python -m pytest tests/test_parse.py", out)


def edit(
    path: str = "/workspace/src/parse.py", old: str = "a + b + 1", new: str = "a + b"
) -> tuple[str, dict[str, Any], str]:
    args = {"command": "str_replace", "path": path, "old_str": old, "new_str": new}
    return (
        "str_replace_editor",
        args,
        f"The file {path} has been edited. Review the changes and make sure they are as expected.",
    )


def view(
    path: str = "/workspace/src/parse.py",
    content: str = "def parse(s):\n    a, b = s.split('+')\n    return int(a) + int(b) + 1\n",
) -> tuple[str, dict[str, Any], str]:
    return ("str_replace_editor", {"command": "view", "path": path}, content)


def stuck_requests(prefix: str = "w") -> list[bytes]:
    """The request bodies of one conversation that stalls on one failure (and gets instructions
    from the proxy) as it grows: edits that change nothing, re-runs, a look at the code."""
    chat = Chat(id_prefix=prefix)
    steps = []
    for call in (
        test_run(),
        edit(),
        test_run(),
        edit(old="a + b", new="a + b + 0"),
        test_run(),
        test_run(),
        view(),
        test_run(),
        test_run(),
    ):
        steps.append(chat.turn(call).bytes())
    return steps


test_run.__test__ = False  # type: ignore[attr-defined]
