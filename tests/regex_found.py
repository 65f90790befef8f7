"""Every pattern the package compiles, found, not listed.

held       every module of the package is imported and walked (its globals, its classes, the
           containers, functions' defaults and closures, and the package's own objects they
           hold), and so is an engine built on each bundled preset (the patterns a policy
           compiles)
written    a literal pattern handed to `re.search`, `re.split`... inside a function (compiled
           by `re`'s own cache, held by nothing the walk sees): read from the source
built      a pattern made at run time from text known only then: each function that makes one
           is listed in `_built`, with one made as it would be (`unlisted_builders` finds any
           function that compiles what is not a literal and is not listed)
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from collections.abc import Callable, Iterator
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import proxy

PACKAGE = Path(proxy.__file__).parent
_RE_CALLS = frozenset({"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"})


def _built() -> dict[str, Callable[[], re.Pattern[Any]]]:
    from proxy.engine.reading.sed import Sought
    from proxy.engine.writing.failed_call import naming
    from proxy.engine.writing.imports import _importing

    return {
        "proxy/engine/writing/imports.py:_importing[0]": lambda: _importing("calc")[0],
        "proxy/engine/writing/imports.py:_importing[1]": lambda: _importing("calc")[1],
        "proxy/engine/writing/failed_call.py:naming": lambda: naming("--file"),
        "proxy/engine/reading/sed.py:pattern": lambda: Sought("return a.b", True, True, True).pattern(),
    }


BUILT_ELSEWHERE = {
    "proxy/engine/reading/classify.py:__init__": "a policy's shell patterns: held by each preset's engine",
    "proxy/engine/outputs/textscan.py:of": "a marker's pattern: held by the marker",
}
"""Functions that compile what is not a literal and whose patterns the walk finds held."""


def _ours(obj: Any) -> bool:
    return (getattr(obj, "__module__", None) or "").startswith("proxy.")


def _inside(obj: Any) -> Iterator[tuple[str, Any]]:
    """(name, value) of what `obj` holds that may hold a pattern."""
    if isinstance(obj, dict):
        for key, value in list(obj.items()):
            yield "[key]", key
            yield f"[{key!r}]"[:80], value
    elif isinstance(obj, tuple | list | set | frozenset):
        yield from ((f"[{i}]", item) for i, item in enumerate(list(obj)))
    elif isinstance(obj, type):
        if _ours(obj):
            yield from ((f".{key}", value) for key, value in list(vars(obj).items()))
    elif callable(obj) and hasattr(obj, "__wrapped__"):
        yield "", obj.__wrapped__
    elif callable(obj) and _ours(obj):
        yield from ((f".default[{i}]", value) for i, value in enumerate(getattr(obj, "__defaults__", None) or ()))
        yield from ((f".closure[{i}]", c.cell_contents) for i, c in enumerate(getattr(obj, "__closure__", None) or ()))
    elif _ours(type(obj)):
        names = [f.name for f in fields(obj)] if is_dataclass(obj) else []
        names += list(getattr(obj, "__dict__", {}))
        for cls in type(obj).__mro__:
            slots = getattr(cls, "__slots__", ())
            names += [slots] if isinstance(slots, str) else list(slots)
        yield from ((f".{a}", getattr(obj, a)) for a in dict.fromkeys(names) if hasattr(obj, a))


def _walk(obj: Any, name: str, found: dict[tuple[Any, int], str], seen: set[int], depth: int = 0) -> None:
    if id(obj) in seen or depth > 12:
        return
    seen.add(id(obj))
    if isinstance(obj, re.Pattern):
        found.setdefault((obj.pattern, obj.flags), name)
        return
    for part, value in _inside(obj):
        _walk(value, name + part, found, seen, depth + 1)


def compiled_patterns() -> dict[str, re.Pattern[Any]]:
    """Every compiled pattern the package holds, by where it was found first."""
    from proxy.engine.core import Engine
    from proxy.settings.policy import bundled_presets, load_policy

    found: dict[tuple[Any, int], str] = {}
    seen: set[int] = set()
    for info in pkgutil.walk_packages(proxy.__path__, "proxy."):
        if info.name.endswith("__main__"):
            continue  # runs the command line
        module = importlib.import_module(info.name)
        for key, value in list(vars(module).items()):
            if not isinstance(value, type(module)):
                _walk(value, f"{info.name}.{key}", found, seen)
    for preset in bundled_presets():
        _walk(Engine.of(load_policy(preset)), f"preset:{preset}", found, seen)
    return {name: re.compile(pattern, flags) for (pattern, flags), name in found.items()}


def _re_calls(path: Path) -> Iterator[tuple[str, ast.Call]]:
    """(enclosing function, call) of each `re.compile(...)`, `re.search(...)`... inside a function."""
    tree = ast.parse(path.read_text(), str(path))
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(function):
                func = node.func if isinstance(node, ast.Call) else None
                if (
                    isinstance(node, ast.Call)
                    and isinstance(func, ast.Attribute)
                    and isinstance(func.value, ast.Name)
                    and func.value.id == "re"
                    and func.attr in _RE_CALLS
                    and node.args
                ):
                    yield function.name, node


_FLAGS_AT = {"compile": 1, "split": 3, "sub": 4, "subn": 4}
"""Where each function of `re` takes its flags among its arguments (2 for the others)."""


def _flags(call: ast.Call) -> int:
    """The flags a call passes (`re.MULTILINE | re.IGNORECASE`...), 0 when it passes none."""
    assert isinstance(call.func, ast.Attribute)
    at = _FLAGS_AT.get(call.func.attr, 2)
    given = [k.value for k in call.keywords if k.arg == "flags"] + call.args[at : at + 1]
    names = {n.attr for arg in given for n in ast.walk(arg) if isinstance(n, ast.Attribute)}
    return sum(int(getattr(re, name)) for name in names)


def written_patterns() -> dict[str, re.Pattern[Any]]:
    """Literal patterns handed to `re` inside a function, compiled as the call would."""
    found: dict[str, re.Pattern[Any]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for function, call in _re_calls(path):
            if isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str | bytes):
                where = f"{path.relative_to(PACKAGE.parent)}:{function}"
                found[where] = re.compile(call.args[0].value, _flags(call))
    return found


def unlisted_builders() -> list[str]:
    """Functions that compile what is not a literal, listed neither in `_built` nor `BUILT_ELSEWHERE`."""
    listed = {name.split("[")[0] for name in _built()} | set(BUILT_ELSEWHERE)
    unlisted = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for function, call in _re_calls(path):
            where = f"{path.relative_to(PACKAGE.parent)}:{function}"
            if not isinstance(call.args[0], ast.Constant) and where not in listed:
                unlisted.append(where)
    return unlisted


def every_pattern() -> dict[str, re.Pattern[Any]]:
    """Held, written and built: every pattern the package compiles, by where it was found first."""
    found: dict[str, re.Pattern[Any]] = {}
    seen: set[tuple[Any, int]] = set()
    built = {name: make() for name, make in _built().items()}
    for name, pattern in {**compiled_patterns(), **written_patterns(), **built}.items():
        if (pattern.pattern, pattern.flags) not in seen:
            seen.add((pattern.pattern, pattern.flags))
            found[name] = pattern
    return found
