"""Salvage: every shape small models write a call in is read back; nothing else ever is."""

from __future__ import annotations

import pytest

from proxy.engine.text.salvage import OfferedTool, may_become_call, miscall, offered_tools, salvage

OFFERED = {
    "execute_bash": OfferedTool("execute_bash", frozenset({"command"})),
    "view": OfferedTool("view", frozenset()),
}
LS = [("execute_bash", {"command": "ls"})]


def calls(text: str) -> list[tuple[str, dict[str, object]]] | None:
    found = salvage(text, OFFERED)
    return None if found is None else [(c.name, dict(c.arguments)) for c in found]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"name": "execute_bash", "arguments": {"command": "ls"}}', LS),
        ('  \n{"name": "execute_bash", "parameters": {"command": "ls"}}\n', LS),
        ('```json\n{"name": "execute_bash", "arguments": {"command": "ls"}}\n```', LS),
        ('```\n{"name": "execute_bash", "arguments": {"command": "ls"}}\n```\n```\n\n', LS),
        ('<tool_call>\n{"name": "execute_bash", "arguments": {"command": "ls"}}\n</tool_call>', LS),
        ('<tool_call>{"name": "execute_bash", "arguments": {"command": "ls"}}', LS),
        ('{"function": {"name": "execute_bash", "arguments": "{\\"command\\": \\"ls\\"}"}}', LS),
        ('{"type": "function", "function": {"name": "execute_bash", "arguments": {"command": "ls"}}}', LS),
        ('{"name": "execute_bash", "arguments": {"command": "ls"}}}', LS),
        ("{'name': 'execute_bash', 'arguments': {'command': 'ls'}}", LS),
        (
            '[{"name": "view", "arguments": {}}, {"name": "execute_bash", "arguments": {"command": "ls"}}]',
            [("view", {}), *LS],
        ),
        (
            '<tool_call>{"name": "view", "arguments": {}}</tool_call>\n<tool_call>{"name": "execute_bash", '
            '"arguments": {"command": "ls"}}</tool_call>',
            [("view", {}), *LS],
        ),
        ('{"name": "execute_bash", "arguments": {"command": "ls"}}\nThat lists the files.', LS),
        (
            '{"name": "execute_bash", "arguments": {"command": "ls"}}\n\nThe tests pass.\n\n'
            '{"name": "finish", "arguments": {"message": "done"}}',
            LS,
        ),
        ('<tool_call>{"name": "execute_bash", "arguments": {"command": "ls"}}</tool_call> and then more text', LS),
    ],
    ids=[
        "bare",
        "parameters_key",
        "fenced_json",
        "fenced_with_a_stray_fence",
        "tool_call_tag",
        "tool_call_tag_unclosed",
        "function_wrapper_string_arguments",
        "openai_shape",
        "unbalanced_closing_brace",
        "single_quotes",
        "list",
        "two_tags",
        "call_then_the_model_runs_on",
        "call_then_a_made_up_result_and_another_call",
        "tag_then_text",
    ],
)
def test_a_whole_reply_that_is_a_call_is_salvaged(text: str, expected: list[tuple[str, dict[str, object]]]) -> None:
    assert calls(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "The tests pass.",
        'I will run {"name": "execute_bash", "arguments": {"command": "ls"}} now.',
        'Here:\n```json\n{"name": "execute_bash", "arguments": {"command": "ls"}}\n```',
        '{"name": "delete_repo", "arguments": {}}',
        '{"name": "execute_bash", "arguments": {}}',
        '{"name": "execute_bash", "arguments": {"command": "rm -',
        '{"answer": 42}',
        '[{"name": "execute_bash", "arguments": {"command": "ls"}}, {"name": "nope", "arguments": {}}]',
        'Sure.\n<tool_call>{"name": "execute_bash", "arguments": {"command": "ls"}}</tool_call>',
    ],
    ids=[
        "empty",
        "prose",
        "prose_around_json",
        "lead_in_then_fence",
        "tool_not_offered",
        "required_key_missing",
        "cut_off_mid_value",
        "json_answer_not_a_call",
        "one_of_two_not_offered",
        "prose_then_tag",
    ],
)
def test_anything_else_is_never_salvaged(text: str) -> None:
    assert calls(text) is None


def test_nothing_offered_means_nothing_salvaged() -> None:
    assert salvage('{"name": "execute_bash", "arguments": {"command": "ls"}}', {}) is None


def test_offered_tools_read_required_keys_from_the_schema() -> None:
    tools = [
        {"type": "function", "function": {"name": "a", "parameters": {"required": ["x", 3]}}},
        {"type": "function", "function": {"name": "b"}},
        "junk",
    ]
    assert offered_tools(tools) == {"a": OfferedTool("a", frozenset({"x"})), "b": OfferedTool("b", frozenset())}
    declared = [{"type": "function", "function": {"name": "c", "parameters": {"properties": {"x": {}, "y": {}}}}}]
    assert offered_tools(declared)["c"].properties == frozenset({"x", "y"})


@pytest.mark.parametrize(
    "prefix", ["", "  \n", "{", '[{"na', "`", "```", "```json", "```json\n", "```\n {", "<tool", "<tool_call>"]
)
def test_a_stream_is_held_while_its_text_may_still_become_a_call(prefix: str) -> None:
    assert may_become_call(prefix)


@pytest.mark.parametrize("prefix", ["Let", " I will", "```python\nimport os", "```json\nHere", "<toolbox>", "`code`"])
def test_a_stream_is_released_as_soon_as_it_cannot(prefix: str) -> None:
    assert not may_become_call(prefix)


SCHEMA_ECHO = (
    '<tools>\n{"type": "function", "function": {"name": "execute_bash", "description": "Run a command.", '
    '"parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}\n</tools>'
)


def test_a_call_in_the_tag_qwens_template_lists_tools_in_is_a_call() -> None:
    """Qwen2.5-Coder-1.5B (llama.cpp's Qwen template) wraps its call in `<tools>`, and runs on."""
    text = '<tools>\n{"name": "execute_bash", "arguments": {"command": "ls"}}\n</tools>\n\nThe output shows <tools'
    assert calls(text) == LS
    assert may_become_call("<tools>") and may_become_call("<too")


def test_the_tools_declaration_copied_back_is_never_a_call() -> None:
    """The same model often echoes the tools block of its prompt: a schema, not a call."""
    assert salvage(SCHEMA_ECHO, OFFERED) is None
    relaxed = {"execute_bash": OfferedTool("execute_bash", frozenset())}  # even with nothing required
    assert salvage(SCHEMA_ECHO, relaxed) is None


def test_calls_end_where_something_else_begins() -> None:
    text = '<tools>\n{"name": "execute_bash", "arguments": {"command": "ls"}}\n</tools>\n' + SCHEMA_ECHO
    assert calls(text) == LS


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "python", "arguments": {"command": "pytest"}}',
        '```json\n{"name": "execute_bash", "arguments": {}}\n```',
        '{"function": {"name": "run", "arguments": "{}"}}',
        '[{"name": "execute_bash", "parameters": {"cmd": "ls"}}]',
        "<tool_call>\n{'name': 'shell', 'arguments': {'command': 'ls'}}\n</tool_call>",
    ],
    ids=["unknown_tool", "missing_required_key", "function_object", "wrong_key_in_list", "tagged_near_json"],
)
def test_a_reply_meant_as_a_call_that_is_none_is_a_miscall(text: str) -> None:
    assert salvage(text, OFFERED) is None and miscall(text, OFFERED)


def test_the_tools_declaration_copied_back_is_a_miscall() -> None:
    assert miscall(SCHEMA_ECHO, OFFERED) and miscall(SCHEMA_ECHO, {})


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "execute_bash", "arguments": {"command": "ls"}}',
        '{"name": "Ada", "born": 1815}',
        '{"result": "ok", "arguments": 3}',
        'I would run {"name": "python", "arguments": {}} next.',
        "The tests pass.",
        "",
        '{"name": "python", "arguments": {"command": "pytest',
    ],
    ids=["a_real_call", "json_answer", "no_name", "prose_around", "prose", "empty", "cut_off"],
)
def test_calls_answers_and_prose_are_never_miscalls(text: str) -> None:
    assert not miscall(text, OFFERED)


DECLARED = {
    "bash": OfferedTool("bash", frozenset({"command"}), frozenset({"command", "timeout"})),
    "editor": OfferedTool("editor", frozenset({"path", "command"}), frozenset({"path", "command", "new_str"})),
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"command": "ls -la"}', [("bash", {"command": "ls -la"})]),
        ('```json\n{"command": "pytest", "timeout": 60}\n```', [("bash", {"command": "pytest", "timeout": 60})]),
        ('{"path": "a.py", "command": "view"}', [("editor", {"path": "a.py", "command": "view"})]),
        ('{"command": "view"}', [("bash", {"command": "view"})]),
    ],
    ids=["one_tool_fits", "fenced_with_optional_key", "the_other_tool_fits", "required_keys_decide"],
)
def test_bare_arguments_that_fit_one_offered_tool_are_a_call_to_it(
    text: str, expected: list[tuple[str, dict[str, object]]]
) -> None:
    found = salvage(text, DECLARED)
    assert found is not None and [(c.name, dict(c.arguments)) for c in found] == expected


@pytest.mark.parametrize(
    "text",
    ['{"answer": 42}', '{"command": "ls", "path": "a.py", "color": "red"}', "{}", '{"timeout": 5}'],
    ids=["no_tool_declares_it", "no_tool_takes_them_all", "nothing", "a_required_key_missing"],
)
def test_bare_arguments_that_fit_no_one_tool_are_no_call(text: str) -> None:
    assert salvage(text, DECLARED) is None


def test_bare_arguments_that_fit_two_tools_are_no_call() -> None:
    both = {
        "a": OfferedTool("a", frozenset({"command"}), frozenset({"command"})),
        "b": OfferedTool("b", frozenset({"command"}), frozenset({"command"})),
    }
    assert salvage('{"command": "ls"}', both) is None
