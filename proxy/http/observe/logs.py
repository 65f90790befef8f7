"""Structured JSON logs: one line per request, one per repair event; secrets redacted."""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import orjson
import structlog

__all__ = ["REDACTED_KEYS", "configure_logging", "redact"]

REDACTED_KEYS = frozenset({"authorization", "api_key", "proxy_key", "upstream_key", "token", "x-api-key"})
"""Event keys whose values never reach a log line."""


def redact(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor: replace secret values with a marker, at any nesting depth."""
    for key, value in list(event.items()):
        if key.lower() in REDACTED_KEYS:
            event[key] = "[redacted]"
        elif isinstance(value, dict):
            event[key] = redact(_logger, _name, dict(value))
    return event


def configure_logging(level: str = "info") -> None:
    """JSON lines on stdout at `level`, each written whole in one write: several workers share
    stdout, and a line split in two writes could be cut by another worker's line."""
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            redact,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(serializer=orjson.dumps),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelNamesMapping()[level.upper()]),
        logger_factory=structlog.BytesLoggerFactory(sys.stdout.buffer),
        cache_logger_on_first_use=False,
    )
