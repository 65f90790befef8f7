"""The files an inline Python program writes, read from its code.

Agents edit with a program given on standard input as often as with an editor: mini-swe-agent
1.x runs on small and large models send `python - <<'PY'` with `p = Path('pkg/mod.py')`,
`s = p.read_text()`, `s.replace(old, new)`, `p.write_text(s)` as their usual edit. Read as a
probe only, such a call is no edit: a failure it set out to fix is never owed a re-run, and a
hand-back counts no edits at all. So the program is parsed (Python's own parser: a `>` in a
comparison or a `;` in a string is never taken for shell) and its writes are found where the
path they go to can be told:

    open(P, 'w' | 'a' | 'x' | 'r+' ...)      P written (positional or `mode=`)
    P.write_text(...), P.write_bytes(...)      P written
    P.open('w' ...)                            P written
    P                                          a string, `Path(...)`/`PurePath(...)` of one,
                                               `os.path.join(...)` or `Path / 'x'` of ones that can
                                               be told, or a name bound once to any of these

Only writes that run whatever happens count: those of the program's own statements and of its
`with` blocks, not those under an `if`, a loop, a `try` or in a function (an agent's careful
edit writes only `if old in s:`, and says "not found" otherwise: judged on the corpus, counting
those took edits that never happened for edits) unless the program's output tells the branch
ran: it printed what only that branch prints and not what only its `else` prints (corpus,
mini-swe-agent 1.x: 140 such programs, 91 printed their branch's `patched`, 20 their `not
found`; `Guarded`, judged against the output when the call is observed). A file the program also reads (`open(P)`,
`P.read_text()`) is written in place; one it only writes is written whole (a new file, or one
replaced outright: the workspace tells which).
A write whose path cannot be told (a loop variable, an f-string) is left out, and a program
that does not parse gives nothing: the call stays a probe, as before.

    p = Path('a/b.py'); p.write_text(p.read_text().replace('x', 'y'))  -> a/b.py in place
    open('new_test.py', 'w').write(TEST)                                  -> new_test.py whole
    print(open('a/b.py').read())                                          -> nothing
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["Guarded", "Program", "python_program", "python_writes"]

_CODE_CHARS = 20_000
"""Programs longer than this are not parsed (an agent's edit is far shorter)."""
_PRINTED_CHARS = 4
_PATH_TYPES = frozenset({"Path", "PurePath", "PosixPath", "PurePosixPath"})
_WRITE_METHODS = frozenset({"write_text", "write_bytes"})
_READ_METHODS = frozenset({"read_text", "read_bytes"})
_WRITE_MODE = frozenset("wax+")


def _callee(node: ast.expr) -> str:
    """The called name, without its module (`open`, `io.open` -> `open`; `pathlib.Path` -> `Path`)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


class _Paths:
    """Expressions that name a file, with the names bound once to one."""

    def __init__(self, tree: ast.Module) -> None:
        bound: dict[str, list[ast.expr]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        bound.setdefault(target.id, []).append(node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.AugAssign, ast.AnnAssign)):
                for name in _names_bound(node):
                    bound.setdefault(name, []).append(ast.Constant(None))  # bound otherwise: not told
        self._bound = {name: values[0] for name, values in bound.items() if len(values) == 1}

    def of(self, node: ast.expr, depth: int = 0) -> str | None:
        if depth > 8:
            return None
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, str) and node.value.strip() else None
        if isinstance(node, ast.Name):
            value = self._bound.get(node.id)
            return self.of(value, depth + 1) if value is not None else None
        if isinstance(node, ast.Call):
            name = _callee(node.func)
            if name in _PATH_TYPES and len(node.args) == 1 and not node.keywords:
                return self.of(node.args[0], depth + 1)
            if name == "join" and node.args and not node.keywords:
                parts = [self.of(a, depth + 1) for a in node.args]
                known = [p for p in parts if p is not None]
                return posixpath.join(*known) if len(known) == len(parts) else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left, right = self.of(node.left, depth + 1), self.of(node.right, depth + 1)
            return posixpath.join(left, right) if left is not None and right is not None else None
        return None


def _names_bound(node: ast.stmt) -> list[str]:
    targets: list[ast.expr] = []
    if isinstance(node, (ast.For, ast.AsyncFor)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _mode(call: ast.Call, at: int) -> str:
    given = call.args[at] if len(call.args) > at else next((k.value for k in call.keywords if k.arg == "mode"), None)
    if given is None:
        return "r"
    return given.value if isinstance(given, ast.Constant) and isinstance(given.value, str) else ""


def _writes_in(mode: str) -> bool:
    """The mode writes (a mode that cannot be told, `open(p, mode)`, is not taken to: a write
    counted that never happened is what the corpus judged wrong)."""
    return bool(_WRITE_MODE & set(mode))


def _access(call: ast.Call, paths: _Paths) -> tuple[str, bool] | None:
    """(the path, written?) for a call that opens, reads or writes a file that can be told."""
    func = call.func
    builtin = isinstance(func, ast.Name) and func.id == "open"
    module = isinstance(func, ast.Attribute) and func.attr == "open" and _callee(func.value) in ("io", "codecs")
    if builtin or module:
        path = paths.of(call.args[0]) if call.args else None
        return (path, _writes_in(_mode(call, 1))) if path is not None else None
    if isinstance(func, ast.Attribute) and func.attr in _WRITE_METHODS | _READ_METHODS | {"open"}:
        path = paths.of(func.value)
        if path is None:
            return None
        if func.attr == "open":
            return path, _writes_in(_mode(call, 0))
        return path, func.attr in _WRITE_METHODS
    return None


@dataclass(frozen=True, slots=True)
class Guarded:
    """A write under a top-level `if` (`if old in s:`): made when the program printed what only
    that branch prints, and not what only its `else` prints."""

    path: str
    whole: bool
    ran: tuple[str, ...]
    """Text only the branch prints (`print('patched')`)."""
    skipped: tuple[str, ...]
    """Text only its `else` prints (`print('pattern not found')`)."""

    def made(self, output: str) -> bool:
        """The program's output tells that the branch ran."""
        return any(t in output for t in self.ran) and not any(t in output for t in self.skipped)


@dataclass(frozen=True, slots=True)
class Program:
    writes: tuple[tuple[str, bool], ...] = ()
    """(path, whole) for each file the program writes whatever happens."""
    guarded: tuple[Guarded, ...] = ()


def python_writes(code: str) -> tuple[tuple[str, bool], ...]:
    """(path, whole) for each file `code` writes, where it can be told (see the module's docstring)."""
    return python_program(code).writes


def python_program(code: str) -> Program:
    """The files `code` writes whatever happens, and those it writes under a top-level `if`
    that its output can tell ran (see the module's docstring)."""
    if len(code) > _CODE_CHARS or not any(m in code for m in ("write", "open(")):
        return Program()
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):
        # SystemError: CPython 3.11's tree builder keeps its depth count per interpreter, and a
        # parse run inside it (a finalizer the collector calls that formats a traceback) leaves
        # it wrong ("AST constructor recursion depth mismatch", gh-106905): not the code's fault
        return Program()
    paths = _Paths(tree)
    read = {a[0] for n in ast.walk(tree) if isinstance(n, ast.Call) and (a := _access(n, paths)) and not a[1]}
    written = _written(_unconditional(tree.body), paths)
    guarded = [
        Guarded(path, path not in read, ran, skipped)
        for branch in _branches(tree.body)
        for path, ran, skipped in _guarded(branch, paths)
        if path not in written
    ]
    return Program(tuple((path, path not in read) for path in written), tuple(guarded))


def _branches(body: list[ast.stmt]) -> Iterator[ast.If]:
    """The top-level `if` statements, and those of the program's `with` blocks."""
    for statement in body:
        if isinstance(statement, ast.If):
            yield statement
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            yield from _branches(statement.body)


def _guarded(branch: ast.If, paths: _Paths) -> Iterator[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """(path, what only the branch prints, what only its `else` prints) for each file written
    under `branch`, when the branch prints something of its own."""
    said, otherwise = _printed(branch.body), _printed(branch.orelse)
    ran = tuple(t for t in said if t not in otherwise)
    if not ran:
        return
    skipped = tuple(t for t in otherwise if t not in said)
    for path in _written((node for statement in branch.body for node in ast.walk(statement)), paths):
        yield path, ran, skipped


def _written(nodes: Iterable[ast.AST], paths: _Paths) -> dict[str, None]:
    """The files the calls among `nodes` write, where the path can be told, in order, once each."""
    written: dict[str, None] = {}
    for node in nodes:
        if isinstance(node, ast.Call) and (access := _access(node, paths)) is not None and access[1]:
            written[access[0]] = None
    return written


def _printed(body: list[ast.stmt]) -> list[str]:
    """The literal text `print` is given in `body` (four characters or more: not a bare `ok`)."""
    return [
        first.value
        for statement in body
        for node in ast.walk(statement)
        if isinstance(node, ast.Call)
        and _callee(node.func) == "print"
        and node.args
        and isinstance(first := node.args[0], ast.Constant)
        and isinstance(first.value, str)
        and len(first.value.strip()) >= _PRINTED_CHARS
    ]


def _unconditional(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of statements that run whatever happens: the program's own, and those of the
    `with` blocks among them; not what an `if`, a loop, a `try` or a function holds (an edit
    under `if old in s:` is not made when the text was not found, and the output says so only
    in the agent's words)."""
    for statement in body:
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            for item in statement.items:
                yield from ast.walk(item.context_expr)
            yield from _unconditional(statement.body)
        elif isinstance(statement, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign)):
            yield from ast.walk(statement)
