"""The call schema a constrained retry sends: only the allowed tools, arguments as declared."""

from __future__ import annotations

from typing import Any

import jsonschema

from proxy.engine.plan.callschema import call_schema
from proxy.engine.writing.vocabulary import Shaped


def tool(name: str, parameters: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


BASH = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
TOOLS = [tool("bash", BASH), tool("finish", {"type": "object", "properties": {}}), {"type": "web_search"}]


def test_one_allowed_tool_is_one_object_with_its_declared_arguments() -> None:
    schema = call_schema(TOOLS, {"bash"})
    assert schema == {
        "type": "object",
        "properties": {"name": {"type": "string", "enum": ["bash"]}, "arguments": BASH},
        "required": ["name", "arguments"],
    }


def test_several_allowed_tools_are_any_of_them_and_nothing_else() -> None:
    schema = call_schema(TOOLS, {"bash", "finish", "absent"})
    assert schema is not None
    assert [o["properties"]["name"]["enum"] for o in schema["anyOf"]] == [["bash"], ["finish"]]


def test_arguments_that_refer_elsewhere_are_any_object() -> None:
    refers = {"type": "object", "properties": {"p": {"$ref": "#/$defs/P"}}, "$defs": {"P": {"type": "string"}}}
    schema = call_schema([tool("edit", refers), tool("odd", "not a schema")], {"edit", "odd"})
    assert schema is not None
    assert [o["properties"]["arguments"] for o in schema["anyOf"]] == [{"type": "object"}, {"type": "object"}]


def test_no_allowed_tool_is_no_schema() -> None:
    assert call_schema(TOOLS, {"absent"}) is None and call_schema(None, {"bash"}) is None


def test_pinned_arguments_are_required_and_held_to_their_one_value_the_rest_as_declared() -> None:
    editor = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "old_str": {"type": "string"}, "new_str": {"type": "string"}},
        "required": ["path"],
    }
    pinned = {"editor": {"path": "/w/a.py", "old_str": "x = 1\n"}}
    schema = call_schema([tool("editor", editor), tool("bash", BASH)], {"editor"}, pinned=pinned)
    assert schema is not None
    arguments = schema["properties"]["arguments"]
    assert arguments["properties"] == {
        "path": {"enum": ["/w/a.py"]},
        "old_str": {"enum": ["x = 1\n"]},
        "new_str": {"type": "string"},
    }
    assert arguments["required"] == ["path", "old_str", "new_str"]
    assert call_schema([tool("bash", BASH)], {"bash"}, pinned={"editor": {"path": "p"}}) == call_schema(TOOLS, {"bash"})


def test_a_held_text_to_replace_makes_its_replacement_required_a_held_read_does_not() -> None:
    """Left optional, the grammar lets the call end without the replacement, and an editor reads a
    missing one as empty (OpenHands' `new_str`): the held lines would be deleted."""
    editor = {
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "path": {"type": "string"},
            "old_str": {"type": "string"},
            "new_str": {"type": "string"},
        },
        "required": ["command", "path"],
    }
    held_edit = {"editor": {"command": "str_replace", "path": "/w/a.py", "old_str": "x = 1"}}
    held_read = {"editor": {"command": "view", "path": "/w/a.py"}}
    edit_schema = call_schema([tool("editor", editor)], {"editor"}, pinned=held_edit)
    read_schema = call_schema([tool("editor", editor)], {"editor"}, pinned=held_read)
    assert edit_schema is not None and read_schema is not None
    assert edit_schema["properties"]["arguments"]["required"] == ["command", "path", "old_str", "new_str"]
    assert read_schema["properties"]["arguments"]["required"] == ["command", "path"]


def test_a_shaped_argument_is_required_and_held_to_its_pattern() -> None:
    """A one-shell edit: the command is the model's to write, in the shape of an in-place edit of one file."""
    schema = call_schema([tool("bash", BASH)], {"bash"}, pinned={"bash": {"command": Shaped(r"^sed -i .*calc\.py$")}})
    assert schema is not None
    arguments = schema["properties"]["arguments"]
    assert arguments["properties"]["command"] == {"type": "string", "pattern": r"^sed -i .*calc\.py$"}
    assert "command" in arguments["required"]


def test_a_replacement_held_to_a_shape_is_required_once() -> None:
    """Both held (its shape: `writing.kept`) and required as a held text's replacement, `new_str`
    is named once: JSON Schema wants `required`'s items unique."""
    editor = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "old_str": {"type": "string"}, "new_str": {"type": "string"}},
        "required": ["path"],
    }
    pinned = {"editor": {"path": "/w/a.py", "old_str": "def f():\n    pass", "new_str": Shaped("^.*def f\\(.*$")}}
    schema = call_schema([tool("editor", editor)], {"editor"}, pinned=pinned)
    assert schema is not None
    assert schema["properties"]["arguments"]["required"] == ["path", "old_str", "new_str"]
    jsonschema.Draft202012Validator.check_schema(schema)
