"""Realistic agent transcripts for the benchmarks: tool calls and multi-KB tool outputs."""

from __future__ import annotations

import random
from typing import Any

import orjson

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "execute_bash",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "str_replace_editor",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}, "path": {"type": "string"}}},
        },
    },
]

_SOURCE_LINE = "    result = transform(value, options=options, strict={strict}, depth={depth})  # keep behaviour {n}\n"


def _pytest_failure(rng: random.Random, test: str, scale: int = 1) -> str:
    dots = "".join(rng.choice("..F.") for _ in range(60))
    body = "".join(f"tests/test_mod{i}.py::test_case_{i} PASSED\n" for i in range(rng.randint(30, 60) * scale))
    return (
        "============================= test session starts ==============================\n"
        f"collected 120 items\n\ntests/test_parse.py {dots} [100%]\n\n{body}"
        "=================================== FAILURES ===================================\n"
        f"____ {test} ____\n\n    def {test}():\n>       assert parse('1 + 2') == 3\nE       AssertionError: assert 4 == 3\n\n"
        f"tests/test_parse.py:12: AssertionError\nFAILED tests/test_parse.py::{test} - AssertionError: assert 4 == 3\n"
        f"==================== 1 failed, 119 passed in {rng.uniform(0.2, 3):.2f}s ====================\n"
        "[Command finished with exit code 1]"
    )


def _file_view(rng: random.Random, scale: int = 1) -> str:
    return "".join(
        f"{n:6d}\t" + _SOURCE_LINE.format(strict=rng.choice(["True", "False"]), depth=rng.randint(1, 9), n=n)
        for n in range(1, 40 * scale)
    )


def turn(
    rng: random.Random, index: int, scale: int = 1, stuck_runs: int = 8
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One assistant message and its tool results (a test run, a file view, or an edit)."""
    call_id = f"call_{index:05d}_{rng.randrange(16**8):08x}"
    kind = (index + 1) % 3
    if kind == 0:
        name, args, out = (
            "execute_bash",
            {"command": "python -m pytest tests/ -x"},
            _pytest_failure(rng, f"test_case_{(index // (3 * stuck_runs)) % 7}", scale),
        )
    elif kind == 1:
        name, args, out = (
            "str_replace_editor",
            {"command": "view", "path": f"/workspace/src/mod{index % 11}.py"},
            _file_view(rng, scale),
        )
    else:
        args = {
            "command": "str_replace",
            "path": f"/workspace/src/mod{index % 11}.py",
            "old_str": "strict=True",
            "new_str": "strict=False",
        }
        name, out = "str_replace_editor", f"The file /workspace/src/mod{index % 11}.py has been edited."
    assistant = {
        "role": "assistant",
        "content": f"Step {index}: let me look at this.",
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": orjson.dumps(args).decode()}}
        ],
    }
    return assistant, [{"role": "tool", "tool_call_id": call_id, "content": out}]


def transcript(turns: int, seed: int = 7, scale: int = 1, stuck_runs: int = 8) -> list[dict[str, Any]]:
    """`turns` turns cycling test run, file view, edit; the same test fails `stuck_runs` runs in a row."""
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. Use the tools to fix the failing tests. " * 20},
        {"role": "user", "content": "The test suite fails on tests/test_parse.py. Make it pass."},
    ]
    for index in range(turns):
        assistant, results = turn(rng, index, scale, stuck_runs)
        messages.append(assistant)
        messages.extend(results)
    return messages


def request_body(messages: list[dict[str, Any]], stream: bool = False) -> bytes:
    return orjson.dumps({"model": "bench", "messages": messages, "tools": TOOLS, "stream": stream, "temperature": 0})
