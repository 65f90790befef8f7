"""One call to an offered tool as a JSON schema, for a gate's retry that requires a call.

A retry that requires a call asks for it two ways: `tool_choice` (a server with a tool-call
grammar honours it) and this schema as the reply's structured-output format (a server that
ignores `tool_choice` honours that instead). The reply then arrives either as a real call or
as the JSON text `{"name": ..., "arguments": {...}}`, which salvage turns into the call.
Measured on llama.cpp build 11434 with Qwen2.5-Coder-1.5B, which ignores `tool_choice:
"required"`: on the fresh recovery-bench tasks 12 of 12 replies were a call to an offered tool
with the schema, 0 of 12 without it (`/tmp/rf_probe.py`-style probe, noted in issue 13).

Rules:
  1. Only the tools the retry allows are in the schema (the forced one, or the ones kept).
  2. A tool's `parameters` are its arguments' schema as declared; when they refer elsewhere
     (`$ref`, which would not resolve from inside this schema) the arguments are any object,
     and salvage still checks the required keys.
  3. A tool narrowed to some values of one argument (`force` wants an edit from an editor whose
     `command` also views) has that argument required and limited to those values.
  4. A tool with arguments pinned (a re-asked edit whose text to replace the proxy has seen in
     the file) has each of them required and held to its one value, or to its shape (`Shaped`:
     a string `pattern`, the one-shell edit's `sed -i ... file`), or to one of its values (`OneOf`:
     the line of several a held edit changes); the rest stay as declared,
     but for the replacement of a held text to replace, which is required: left optional, the
     grammar lets the call end without it, and an editor reads a missing replacement as empty
     (OpenHands' `new_str`: the held lines deleted).
  5. No tools: no schema.

A dialect writes the schema only when the request has no format of its own, and the engine
asks for it only while salvage is on (otherwise the JSON text would reach the agent as prose).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import orjson

from proxy.engine.reading.proposal import NEW_ARGS, OLD_ARGS
from proxy.engine.writing.vocabulary import OneOf, Shaped

__all__ = ["SCHEMA_NAME", "Narrow", "call_schema"]

SCHEMA_NAME = "tool_call"
"""The name a dialect gives the schema where its format needs one (chat, Responses)."""


Narrow = tuple[str, Collection[str]]
"""One argument of a tool and the values it may take."""


def _arguments(parameters: Any, narrow: Narrow | None) -> dict[str, Any]:
    if not isinstance(parameters, dict):
        return {"type": "object"}
    try:
        refers = b'"$ref"' in orjson.dumps(parameters)
    except TypeError:
        return {"type": "object"}
    if refers:
        return {"type": "object"}
    properties = parameters.get("properties")
    if narrow is None or not isinstance(properties, dict):
        return parameters
    arg, values = narrow
    found = properties.get(arg)
    declared: dict[str, Any] = found if isinstance(found, dict) else {}
    listed = declared.get("enum")
    allowed = [v for v in listed if v in values] if isinstance(listed, list) else sorted(values)
    if not allowed:
        return parameters
    required = parameters.get("required")
    required = list(required) if isinstance(required, list) else []
    return {
        **parameters,
        "properties": {**properties, arg: {**declared, "type": "string", "enum": allowed}},
        "required": required if arg in required else [*required, arg],
    }


def _held(value: Any) -> dict[str, Any]:
    """One pinned argument's schema: its one value, one of its values, or a string of its shape."""
    if isinstance(value, Shaped):
        return {"type": "string", "pattern": value.pattern}
    if isinstance(value, OneOf):
        return {"type": "string", "enum": list(value.values)}
    return {"enum": [value]}


def _pinned(arguments: dict[str, Any], pinned: Mapping[str, Any] | None) -> dict[str, Any]:
    properties = arguments.get("properties")
    if not pinned or not isinstance(properties, dict):
        return arguments
    required = arguments.get("required")
    required = list(required) if isinstance(required, list) else []
    held = {name: _held(value) for name, value in pinned.items()}
    replacement = [name for name in NEW_ARGS if name in properties] if any(n in pinned for n in OLD_ARGS) else []
    return {
        **arguments,
        "properties": {**properties, **held},
        "required": list(dict.fromkeys([*required, *pinned, *replacement])),
    }


def call_schema(
    tools: Sequence[Any] | None,
    names: Collection[str],
    narrow: Mapping[str, Narrow] | None = None,
    pinned: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any] | None:
    """The schema of one call to any of the chat-style `tools` named in `names` (`pinned`: per
    tool, arguments held to one value each)."""
    options: list[dict[str, Any]] = []
    for tool in tools or ():
        function = tool.get("function") if isinstance(tool, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or name not in names or not isinstance(function, dict):
            continue
        options.append(
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "enum": [name]},
                    "arguments": _pinned(
                        _arguments(function.get("parameters"), (narrow or {}).get(name)), (pinned or {}).get(name)
                    ),
                },
                "required": ["name", "arguments"],
            }
        )
    if not options:
        return None
    return options[0] if len(options) == 1 else {"anyOf": options}
