"""Where a Python file's imported names come from: the file of the module that defines a function
the failing code calls, so that a failure whose fault is one call deeper can be followed there.

    from units import to_fahrenheit          -> to_fahrenheit: units.py, beside the importing file
    from .units import to_fahrenheit as f    -> f: the same
    from ..core.units import convert         -> convert: core/units.py, beside the parent folder
    from pkg.units import convert            -> convert: pkg/units.py, beside the importing file
                                                (a package the file's folder holds; where the
                                                project's root is another folder, the agent's read
                                                of it fails and says so)

Not followed: `import units` (its calls are `units.f(...)`, a name the module defines only at run
time), `import *`, a module of Python's standard library (`from collections import Counter`). A
package installed beside the project cannot be told from here: its path is only a place to look,
never a claim that the file exists (the agent's read of it says).
"""

from __future__ import annotations

import posixpath
import re
import sys
from collections.abc import Iterator

from proxy.engine.outputs.excerpt import called_names

__all__ = ["imported_callees", "imports"]

_FROM = re.compile(
    r"^from(?:[ \t]++(\.*+)([\w.]*+)(?<![ \t])|[ \t](?=[ \t]))[ \t]+import[ \t]+(?:(?P<open>\()|([^#\n]*))",
    re.MULTILINE,
)
"""`from MODULE import` and what follows it on the line; `open`: a parenthesised list follows,
read up to its `)` by `_from_imports`. A `from  import` with no module between (two blanks or
more) is still read as one (its groups empty), as is each run of blanks, once."""
_NAMES = re.compile(r"[^#\n]*")
_NAME = re.compile(r"^(\w+)(?:\s+as\s+(\w+))?$")
_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)")


def imported_callees(code: str, source: str, path: str) -> tuple[tuple[str, str], ...]:
    """(name, module file) of each function `code` calls (in order) that `source`, the file at
    `path` holding it, imports by name from another module; the module's file as a path beside
    `path`'s folder."""
    imported = _imports(source, posixpath.dirname(path))
    own = _DEF.match(code)
    return tuple(
        (name, imported[name])
        for name in called_names(code)
        if name in imported and (own is None or name != own.group(1))
    )


def imports(source: str, path: str) -> bool:
    """`source` (a test) imports the module whose file is `path`, by the module's name and not
    from a package (where the file is then another): Python's `from calc import ...`,
    `from .calc import`, `import calc`; a script's `from './calc'` or `require('./calc')`."""
    python, script = _importing(posixpath.splitext(posixpath.basename(path))[0])
    return python.search(source) is not None or script.search(source) is not None


def _importing(stem: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A Python import and a script's import of the module `stem` (the growth test builds them too)."""
    name = re.escape(stem)
    python = rf"^[ \t]*(?:from[ \t]+\.*{name}[ \t]+import\b|import[ \t]+{name}\b(?!\.))"
    script = rf"""(?:\bfrom|\brequire\()[ \t]*['"][^'"\n]*/{name}(?:\.[cm]?[jt]sx?)?['"]"""
    return re.compile(python, re.MULTILINE), re.compile(script)


def _from_imports(source: str) -> Iterator[tuple[str, str, str]]:
    """(dots, module, the names imported) of each `from ... import` (the names in parentheses,
    else the rest of the line; a module not named: empty). A list in
    parentheses is read up to the first `)` after it, across lines; with none left in the source
    it is read as the rest of its line, the `(` and all (a `)` is looked for once, not from every
    open list again)."""
    last_close = source.rfind(")")
    at = 0
    while (match := _FROM.search(source, at)) is not None:
        dots, module = match.group(1) or "", match.group(2) or ""
        if match["open"] is not None and last_close > match.end():
            close = source.index(")", match.end())
            yield dots, module, source[match.end() : close]
            at = close + 1
        elif match["open"] is not None:
            names = _NAMES.match(source, match.start("open"))
            assert names is not None  # it matches the empty string
            yield dots, module, names.group()
            at = names.end()
        else:
            yield dots, module, match.group(4)
            at = match.end()


def _imports(source: str, folder: str) -> dict[str, str]:
    """Each name imported `from module import name`, with the module's file."""
    found: dict[str, str] = {}
    for dots, module, names in _from_imports(source):
        if not module:  # `from . import x`: a module, not a function
            continue
        if not dots and module.split(".")[0] in sys.stdlib_module_names:
            continue
        base = folder
        for _ in range(max(0, len(dots) - 1)):
            base = posixpath.dirname(base)
        where = posixpath.join(base, module.replace(".", "/") + ".py") if base else module.replace(".", "/") + ".py"
        for item in names.split(","):
            named = _NAME.match(item.strip())
            if named is not None:
                found.setdefault(named.group(2) or named.group(1), where)
    return found
