"""Structured output: where each dialect asks the server to constrain a reply to a JSON schema,
and how (for the call schemas of `proxy/engine/plan/callschema.py`).

    chat        `response_format: {"type": "json_schema", "json_schema": {"name", "schema"}}`
                (read by llama.cpp, vLLM, Ollama's /v1 and OpenAI)
    responses   `text.format: {"type": "json_schema", "name", "schema"}`, beside other `text` settings
    ollama      `format: <the schema>` (/api/chat)

Each returns the member to set and its value; a request that sets that member already keeps
its own (the dialect checks, see `text_format` for Responses).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from proxy.engine.plan.callschema import SCHEMA_NAME

__all__ = ["Structured", "ollama_format", "response_format", "text_format"]

Structured = Callable[[Mapping[str, Any]], tuple[str, Any]]
"""A dialect's way to ask for structured output: (member, value) for a schema."""


def response_format(schema: Mapping[str, Any]) -> tuple[str, Any]:
    return "response_format", {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": dict(schema)}}


def ollama_format(schema: Mapping[str, Any]) -> tuple[str, Any]:
    return "format", dict(schema)


def text_format(schema: Mapping[str, Any], text: Any) -> tuple[str, Any] | None:
    """Responses: the schema as `text.format`, other `text` settings kept; None when the request
    has a format of its own."""
    if isinstance(text, dict) and "format" in text:
        return None
    current = text if isinstance(text, dict) else {}
    return "text", {**current, "format": {"type": "json_schema", "name": SCHEMA_NAME, "schema": dict(schema)}}
