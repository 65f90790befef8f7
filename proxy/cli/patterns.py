"""`repair-proxy patterns`: every pattern's defaults, as the TOML a policy would write them.

Each pattern declares its options in its own detector file (its ladder and any knob of its
own); this prints them all, each table under the first lines of its detector's docstring, so
a team can copy a table into its policy and change what it needs.
"""

from __future__ import annotations

import importlib
from enum import Enum

from proxy.engine.detectors import REGISTRY
from proxy.settings.policy import Ladder

__all__ = ["patterns_toml"]


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return f'"{value.value}"'
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"no TOML for a {type(value).__name__}")


def _table(name: str, options: Ladder) -> list[str]:
    lines = [f"[patterns.{name}]"]
    for key, value in options.model_dump().items():
        lines.append(f"{key} = {_value(value)}")
    return lines


def _summary(name: str) -> list[str]:
    """The detector docstring's first paragraph, as comments."""
    doc = importlib.import_module(f"proxy.engine.detectors.{name}").__doc__ or ""
    first = doc.strip().split("\n\n", 1)[0]
    return [f"# {line}".rstrip() for line in first.splitlines()]


def patterns_toml() -> str:
    """Every pattern's default table, in planning order."""
    blocks = ["\n".join([*_summary(d.name), *_table(d.name, d.options)]) for d in REGISTRY]
    return "\n\n".join(blocks) + "\n"
