"""The proxy's own error types and the OpenAI-shaped error body it answers with."""

from __future__ import annotations

from dataclasses import dataclass

import orjson
from aiohttp import web

__all__ = ["ConfigError", "ConfigProblem", "openai_error"]


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """One invalid key in one file."""

    file: str
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.key}: {self.message}"


class ConfigError(Exception):
    """A config or policy file that cannot be used; names every bad key and its file."""

    def __init__(self, problems: list[ConfigProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in problems))


def openai_error(status: int, message: str, *, code: str, kind: str = "proxy_error") -> web.Response:
    """A response in OpenAI's error shape, so SDKs raise their own exception types."""
    body = {"error": {"message": message, "type": kind, "code": code, "param": None}}
    return web.Response(
        status=status,
        body=orjson.dumps(body),
        content_type="application/json",
    )
