"""Salvage: a tool call the model wrote as text, read back as the call it meant.

Small local models often answer with the call as text instead of a structured tool call:
a bare or fenced JSON object with `name` and `arguments` (or `parameters`), a list of them,
`<tool_call>...</tool_call>` tags (or `<tools>`, the tag Qwen's template lists the tools in,
which a small model mixes up with it), or `{"function": {...}}`, or only the arguments
(`{"command": "ls"}`) when they fit exactly one offered tool's declared arguments; sometimes
near-JSON (single quotes, an unbalanced closing brace), mended by `json_repair`. `salvage` returns the calls
when the reply *begins* with such calls (whitespace and fences aside), every name is an
offered tool, and every call's arguments hold the tool's required keys. What the model
writes after its calls is dropped, as a server's own tool-call parser ends the message at
the call: measured on Qwen2.5-Coder-1.5B, it often runs on and makes up the call's result
("The test suite passed."), which must not reach the agent's transcript. A reply that begins
with prose (that mentions JSON or not), a final answer, a call to a tool not offered, or text
cut off mid-value is never a call: the reply is left as it is.

`miscall` says whether a reply that is no call was meant as one (a call-shaped object naming a
tool not offered, missing a required key, or a tool's declaration copied back): never an
answer, whatever else holds. `may_become_call` says whether a streamed reply's text so far can
still turn out to be a call, so a stream is held only while that is possible.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import takewhile
from typing import Any

import json_repair
import orjson

__all__ = [
    "MAX_CALL_CHARS",
    "OfferedTool",
    "SalvagedCall",
    "call_shaped",
    "may_become_call",
    "miscall",
    "offered_tools",
    "ran_on",
    "salvage",
]

MAX_CALL_CHARS = 256 * 1024
"""Longest text read as a call (a whole file written through an edit tool fits); past it, prose."""

_FENCE_OPEN = re.compile(r"^```[\w-]*[ \t]*\n")
_FENCE_CLOSE = re.compile(r"\n?```[\s`]*$")
_TAGGED = re.compile(r"<(tool_call|tools)>\s*+((?:\s*+\S)*?)\s*+(?:</\1>|$)")
"""A tagged call, up to its closing tag or the end, the whitespace around it left out. The call is
read a word at a time (a run of whitespace with the character after it): read a character at a
time, every blank tried the rest of its run for the closing tag (quadratic in the run)."""
_TAGS = ("<tool_call>", "<tools>")
_DECODER = json.JSONDecoder()
_FENCE = "```"


@dataclass(frozen=True, slots=True)
class OfferedTool:
    """A tool the request offers, as far as salvage needs it."""

    name: str
    required: frozenset[str]
    properties: frozenset[str] = frozenset()
    """The argument names its schema declares."""


@dataclass(frozen=True, slots=True)
class SalvagedCall:
    name: str
    arguments: Mapping[str, Any]

    @property
    def arguments_json(self) -> str:
        return orjson.dumps(self.arguments).decode()


def offered_tools(tools: Sequence[Any] | None) -> dict[str, OfferedTool]:
    """The chat-style `tools` of a request, by name."""
    found: dict[str, OfferedTool] = {}
    for tool in tools or ():
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        params = function.get("parameters")
        required = params.get("required") if isinstance(params, dict) else None
        names = frozenset(r for r in required if isinstance(r, str)) if isinstance(required, list) else frozenset()
        declared = params.get("properties") if isinstance(params, dict) else None
        properties = frozenset(k for k in declared if isinstance(k, str)) if isinstance(declared, dict) else frozenset()
        found[function["name"]] = OfferedTool(function["name"], names, properties)
    return found


def _fitting(arguments: dict[str, Any], offered: Mapping[str, OfferedTool]) -> str | None:
    """The one offered tool whose declared arguments take exactly these (its required ones among
    them), when just one does: a bare arguments object meant for it."""
    keys = arguments.keys()
    fits = [t.name for t in offered.values() if keys and t.properties and t.required <= keys <= t.properties]
    return fits[0] if len(fits) == 1 else None


def may_become_call(text: str) -> bool:
    """The text so far is empty, or the start of a JSON value, a fence or a `<tool_call>` tag."""
    head = text.lstrip()
    if not head:
        return True
    if len(head) > MAX_CALL_CHARS:
        return False
    if head[0] in "{[":
        return True
    if head.startswith(_FENCE) or _FENCE.startswith(head):
        after = head[len(_FENCE) :]
        newline = after.find("\n")
        if newline == -1:
            return re.fullmatch(r"[\w-]*[ \t]*", after) is not None
        rest = after[newline + 1 :].lstrip()
        return not rest or rest[0] in "{["
    return any(head.startswith(tag) or tag.startswith(head) for tag in _TAGS)


def _loads(text: str) -> Any:
    """JSON, or near-JSON mended; None when the text is not a whole JSON value."""
    text = text.strip()
    if not text or text[0] not in "{[" or text[-1] not in "}]":
        return None  # prose around it, or cut off mid-value
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        mended = json_repair.repair_json(text, return_objects=True, skip_json_loads=True)
    except Exception:
        return None
    return mended if isinstance(mended, dict | list) and mended else None


def _call(value: Any, offered: Mapping[str, OfferedTool]) -> SalvagedCall | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):
        value = value["function"]
    schema = value.get("parameters")
    if isinstance(schema, dict) and schema.get("type") == "object" and "properties" in schema:
        return None  # the tool's declaration copied back (its JSON schema), not a call of it
    name = value.get("name")
    if name is None and "arguments" not in value and "parameters" not in value:
        fitting = _fitting(value, offered)  # the arguments alone, for the one tool they fit
        return SalvagedCall(fitting, value) if fitting is not None else None
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        arguments = _loads(arguments) if arguments.strip() else {}
    if not isinstance(name, str) or name not in offered or not isinstance(arguments, dict):
        return None
    if not offered[name].required <= arguments.keys():
        return None
    return SalvagedCall(name, arguments)


def _leading(text: str) -> list[Any] | None:
    """The complete JSON values the text begins with (whitespace between them), or None."""
    values: list[Any] = []
    at = 0
    while at < len(text) and text[at] in "{[":
        try:
            value, end = _DECODER.raw_decode(text, at)
        except json.JSONDecodeError:
            break
        values.append(value)
        at = end
        while at < len(text) and text[at].isspace():
            at += 1
    return values or None


def _values(text: str) -> list[Any] | None:
    """The JSON values the text begins with (whole, or leading with more text after), or None."""
    if text.startswith(_TAGS):
        parts: list[Any] = []
        at = 0
        for match in _TAGGED.finditer(text):
            value = _loads(match.group(2))
            if text[at : match.start()].strip() or value is None:
                break  # the calls end where something else begins (what it ran on with is dropped)
            parts.append(value)
            at = match.end()
        return parts or None
    if any(tag in text for tag in _TAGS):
        return None
    body = _FENCE_OPEN.sub("", text, count=1)
    leading = _leading(body)  # strict JSON first: calls, and whatever the model ran on with
    if leading is None:
        whole = _loads(_FENCE_CLOSE.sub("", body, count=1))  # then the whole text as near-JSON
        leading = None if whole is None else [whole]
    if leading is None:
        return None
    flat: list[Any] = []
    for value in leading:
        flat.extend(value if isinstance(value, list) else [value])
    return flat


def ran_on(text: str) -> bool:
    """The text begins with complete JSON and the model has gone on writing something else after
    it (a streamed reply whose calls, if any, are already whole)."""
    body = _FENCE_OPEN.sub("", text.lstrip(), count=1)
    at = 0
    while at < len(body) and body[at] in "{[":
        try:
            at = _DECODER.raw_decode(body, at)[1]
        except json.JSONDecodeError:
            return False
        while at < len(body) and body[at].isspace():
            at += 1
    rest = body[at:].lstrip("`").strip()
    return at > 0 and bool(rest) and rest[0] not in "{[<"


def salvage(text: str, offered: Mapping[str, OfferedTool]) -> tuple[SalvagedCall, ...] | None:
    """The calls the whole of `text` writes out, when every one is a valid call to an offered tool."""
    if not offered or not text.strip() or len(text) > MAX_CALL_CHARS:
        return None
    values = _values(text.strip())
    if not values:
        return None
    calls = [_call(v, offered) for v in values]
    if text.lstrip().startswith(_TAGS):  # tagged calls end where a block is no call (run on, dropped)
        calls = list(takewhile(lambda call: call is not None, calls))
    if not calls or any(c is None for c in calls):
        return None
    return tuple(c for c in calls if c is not None)


def call_shaped(text: str) -> bool:
    """The text begins with a call-shaped JSON object (`name` with `arguments` or `parameters`,
    or a `function` object; bare, fenced or tagged), whether or not it is a valid call."""
    if not text.strip() or len(text) > MAX_CALL_CHARS:
        return False
    values = _values(text.strip())
    first = values[0] if values else None
    if not isinstance(first, dict):
        return False
    if isinstance(first.get("function"), dict):
        return True
    return isinstance(first.get("name"), str) and ("arguments" in first or "parameters" in first)


def miscall(text: str, offered: Mapping[str, OfferedTool]) -> bool:
    """The text is call-shaped (`call_shaped`) and yet no call to an offered tool."""
    return call_shaped(text) and salvage(text, offered) is None
