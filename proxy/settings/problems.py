"""Problems with a config or policy file, each naming its file and key, and the one TOML reader."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

__all__ = ["ConfigError", "ConfigProblem", "key_of", "problems_of", "read_toml"]


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


def problems_of(exc: ValidationError, file: str, raw: Any = None) -> list[ConfigProblem]:
    """pydantic's errors as problems naming `file` and the key (`key_of`, in `raw`: what was read)."""
    return [ConfigProblem(file, key_of(err["loc"], raw), err["msg"]) for err in exc.errors()]


def key_of(loc: tuple[int | str, ...], raw: Any = None) -> str:
    """A location in what was read as a key: dotted, with an entry of a list of tables named by its
    `name` where it has one (`team["blue"].policy`, a `[[team]]` table), else by its index (`team.0`)."""
    key, node = "", raw
    for part in loc:
        if isinstance(part, int):
            node = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
            name = node.get("name") if isinstance(node, dict) else None
            key += f'["{name}"]' if isinstance(name, str) and name else f".{part}"
        else:
            node = node.get(part) if isinstance(node, dict) else None
            key += f".{part}" if key else str(part)
    return key or "<root>"


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file's tables; a missing file or bad syntax is a `ConfigError` naming the file."""
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError([ConfigProblem(str(path), "<file>", "no such file")]) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([ConfigProblem(str(path), "<syntax>", str(exc))]) from None
