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

from proxy.engine.reading.excerpt import called_names

__all__ = ["imported_callees", "imports"]

_FROM = re.compile(r"^from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(?:\(([^)]*)\)|([^#\n]*))", re.MULTILINE)
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
    stem = re.escape(posixpath.splitext(posixpath.basename(path))[0])
    python = rf"^[ \t]*(?:from[ \t]+\.*{stem}[ \t]+import\b|import[ \t]+{stem}\b(?!\.))"
    script = rf"""(?:\bfrom|\brequire\()[ \t]*['"][^'"\n]*/{stem}(?:\.[cm]?[jt]sx?)?['"]"""
    return re.search(python, source, re.MULTILINE) is not None or re.search(script, source) is not None


def _imports(source: str, folder: str) -> dict[str, str]:
    """Each name imported `from module import name`, with the module's file."""
    found: dict[str, str] = {}
    for match in _FROM.finditer(source):
        dots, module, grouped, names = match.groups()
        if not module:  # `from . import x`: a module, not a function
            continue
        if not dots and module.split(".")[0] in sys.stdlib_module_names:
            continue
        base = folder
        for _ in range(max(0, len(dots) - 1)):
            base = posixpath.dirname(base)
        where = posixpath.join(base, module.replace(".", "/") + ".py") if base else module.replace(".", "/") + ".py"
        for item in (grouped or names).split(","):
            named = _NAME.match(item.strip())
            if named is not None:
                found.setdefault(named.group(2) or named.group(1), where)
    return found
