"""The tool schemas of common agents, as they send them in `tools` (trimmed to what matters)."""

from __future__ import annotations

from typing import Any


def fn(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


S = {"type": "string"}
I = {"type": "integer"}  # noqa: E741

VOCABULARIES: dict[str, list[dict[str, Any]]] = {
    "openhands": [
        fn("execute_bash", {"command": S, "is_input": S, "timeout": I}, ["command"]),
        fn(
            "str_replace_editor",
            {
                "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert", "undo_edit"]},
                "path": S,
                "file_text": S,
                "old_str": S,
                "new_str": S,
                "insert_line": I,
                "view_range": {"type": "array", "items": I},
            },
            ["command", "path"],
        ),
        fn("finish", {"message": S}, ["message"]),
    ],
    "swe_agent": [fn("bash", {"command": S}, ["command"]), fn("submit", {}, [])],
    "mini_swe_agent": [fn("bash", {"command": S}, ["command"])],
    "claude_code": [
        fn("Bash", {"command": S, "timeout": I, "description": S}, ["command"]),
        fn("Read", {"file_path": S, "offset": I, "limit": I}, ["file_path"]),
        fn(
            "Edit",
            {"file_path": S, "old_string": S, "new_string": S, "replace_all": {"type": "boolean"}},
            ["file_path", "old_string", "new_string"],
        ),
        fn("Write", {"file_path": S, "content": S}, ["file_path", "content"]),
        fn("Grep", {"pattern": S, "path": S, "glob": S}, ["pattern"]),
        fn("Glob", {"pattern": S, "path": S}, ["pattern"]),
    ],
    "codex": [
        fn("shell", {"command": {"type": "array", "items": S}, "workdir": S, "timeout_ms": I}, ["command"]),
        fn("apply_patch", {"input": S}, ["input"]),
    ],
    "cline": [
        fn("execute_command", {"command": S, "requires_approval": {"type": "boolean"}}, ["command"]),
        fn("read_file", {"path": S}, ["path"]),
        fn("write_to_file", {"path": S, "content": S}, ["path", "content"]),
        fn("replace_in_file", {"path": S, "diff": S}, ["path", "diff"]),
        fn("search_files", {"path": S, "regex": S, "file_pattern": S}, ["path", "regex"]),
    ],
    "goose": [
        fn("developer__shell", {"command": S}, ["command"]),
        fn(
            "developer__text_editor",
            {
                "command": {"type": "string", "enum": ["view", "write", "str_replace", "undo_edit"]},
                "path": S,
                "file_text": S,
                "old_str": S,
                "new_str": S,
            },
            ["command", "path"],
        ),
    ],
}
"""Agent family -> its tools."""

SHELL_TOOL = {
    "openhands": "execute_bash",
    "swe_agent": "bash",
    "mini_swe_agent": "bash",
    "claude_code": "Bash",
    "codex": "shell",
    "cline": "execute_command",
    "goose": "developer__shell",
}
