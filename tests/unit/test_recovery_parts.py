"""The recovery bench's two parts and its `alone` arm's agent: every repository is in one part,
the held-out ones say so in their `stuck.json`; the agent reads a call written as JSON text the
way Qwen2.5-Coder-1.5B writes it on llama.cpp (content, fenced or bare), and only such a call."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from tiny_agent import REPOS, calls_in_text, part_of, repos_in


def test_every_repository_is_in_one_part_and_the_train_part_is_what_the_remedies_were_shaped_on() -> None:
    every = sorted(p.name for p in REPOS.iterdir() if p.is_dir())
    assert sorted(repos_in("train") + repos_in("test")) == every
    assert {"bank", "calc", "leap", "stack", "temps", "vowels"} <= set(repos_in("train"))
    assert len(repos_in("test")) >= 3
    assert all(part_of(repo) == "test" for repo in repos_in("test"))


CALLS = [
    # (reply text, style, the calls the agent reads in it)
    (
        '```json\n{"name": "execute_bash", "arguments": {"command": "python -m pytest"}}\n```',
        "openhands",
        [("execute_bash", {"command": "python -m pytest"})],
    ),
    (
        '{"name": "str_replace_editor", "arguments": {"command": "view", "path": "/r/a.py"}}',
        "openhands",
        [("str_replace_editor", {"command": "view", "path": "/r/a.py"})],
    ),
    (
        '<tool_call>\n{"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}\n</tool_call>',
        "bash",
        [("bash", {"command": "ls"})],
    ),
    (
        'I will run it. {"name": "bash", "arguments": {"command": "ls"}} then {"name": "bash", '
        '"arguments": {"command": "pwd"}}',
        "bash",
        [("bash", {"command": "ls"}), ("bash", {"command": "pwd"})],
    ),
    # must not: a tool not offered in this style, no arguments object, the tools block echoed, prose
    ('{"name": "bash", "arguments": {"command": "ls"}}', "openhands", []),
    ('{"name": "execute_bash"}', "openhands", []),
    ('<tools>\n{"type": "function", "function": {"name": "execute_bash"}}\n</tools>', "openhands", []),
    ("The test fails because the bound is wrong; change < to <=.", "openhands", []),
    ('{"name": "execute_bash", "arguments": {"command": "ls"', "openhands", []),
]


@pytest.mark.parametrize(("text", "style", "calls"), CALLS)
def test_the_agent_reads_calls_written_as_json_text_and_nothing_else(
    text: str, style: str, calls: list[tuple[str, dict[str, object]]]
) -> None:
    assert calls_in_text(text, style) == calls
