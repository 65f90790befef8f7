"""Task identity is the person's request: framework context is skipped, the header wins."""

from __future__ import annotations

from typing import Any

from proxy.engine.text.identity import TASK_HEADER, conversation_id, task_id
from proxy.engine.text.textcalls import is_framework_context

ENVIRONMENT = (
    "<environment_context>\n  <cwd>/home/me/project</cwd>\n  <approval_policy>never</approval_policy>\n"
    "  <sandbox_mode>workspace-write</sandbox_mode>\n  <shell>bash</shell>\n</environment_context>"
)
INSTRUCTIONS = "<user_instructions>\nAlways run the tests before you finish.\n</user_instructions>"


def codex(prompt: str) -> list[dict[str, Any]]:
    """Codex's transcript as it reaches the proxy: a developer message, its context blocks as
    user messages, then the person's prompt."""
    return [
        {"role": "developer", "content": "You are Codex, a coding agent."},
        {"role": "user", "content": INSTRUCTIONS},
        {"role": "user", "content": [{"type": "input_text", "text": ENVIRONMENT}]},
        {"role": "user", "content": [{"type": "input_text", "text": prompt}]},
    ]


def test_codex_context_blocks_are_not_the_task() -> None:
    """Two Codex runs in one directory are one task only when the person asked the same thing."""
    stuck = task_id(codex("Fix the failing test in tests/test_calc.py"), {})
    assert task_id(codex("Fix the failing test in tests/test_calc.py"), {}) == stuck
    assert task_id(codex("What is the capital of France?"), {}) != stuck
    assert stuck == task_id([{"role": "user", "content": "Fix the failing test in tests/test_calc.py"}], {})


def test_aider_file_summaries_are_not_the_task() -> None:
    """aider shares its files in user messages (acknowledged `Ok.`) before the person's request."""
    shared = [
        {"role": "system", "content": "Act as an expert software developer."},
        {
            "role": "user",
            "content": "Here are summaries of some files present in my git repository.\ncalc.py:\n def add",
        },
        {"role": "assistant", "content": "Ok."},
    ]
    one = task_id([*shared, {"role": "user", "content": "make add() return the sum"}], {})
    other = task_id([*shared, {"role": "user", "content": "rename calc.py to maths.py"}], {})
    assert one != other
    assert one == task_id([{"role": "user", "content": "make   add() return the sum"}], {})


def test_a_message_with_prose_around_a_tag_is_a_persons() -> None:
    """Only a message made of tagged blocks alone is context: a person may quote a tag."""
    assert is_framework_context(ENVIRONMENT) and is_framework_context(f"{INSTRUCTIONS}\n\n{ENVIRONMENT}\n")
    assert not is_framework_context("Please fix <b>this</b> bug in the parser")
    assert not is_framework_context("<b>this</b> is broken")
    assert not is_framework_context("<environment_context> never closed")


def test_the_task_header_wins() -> None:
    assert task_id(codex("anything"), {TASK_HEADER: "repo-42"}) == "repo-42"
    assert task_id(codex("something else"), {TASK_HEADER: "repo-42"}) == "repo-42"


def test_two_runs_of_one_task_are_two_conversations() -> None:
    """The first reply's tool-call ids are random per run: same task, different conversations."""

    def run(call_id: str) -> list[dict[str, Any]]:
        call = {"id": call_id, "type": "function", "function": {"name": "shell", "arguments": "{}"}}
        return [*codex("Fix it"), {"role": "assistant", "content": None, "tool_calls": [call]}]

    assert task_id(run("call_a"), {}) == task_id(run("call_b"), {})
    assert conversation_id(run("call_a"), {}) != conversation_id(run("call_b"), {})
    assert conversation_id(run("call_a"), {}) == conversation_id(run("call_a"), {})
