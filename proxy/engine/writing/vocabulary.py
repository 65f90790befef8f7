"""The agent's own vocabulary: how this agent reads a file, replaces code in it and runs a
command, from the request's `tools` schema and the policy's classification, so a remedy can
name an exact call the agent can copy (an edit with the code left for the model to fill in).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from proxy.engine.reading.classify import PATH_ARGS, Classifier
from proxy.engine.reading.proposal import NEW_ARGS, OLD_ARGS
from proxy.engine.writing.kept import definitions_kept
from proxy.engine.writing.sed_script import SED_SCRIPT, held_script
from proxy.engine.writing.unlike import unlike
from proxy.settings.kinds import CallKind

__all__ = ["Call", "Learnt", "OneOf", "Shaped", "Vocabulary", "learn_vocabulary"]

_READ_WORDS = ("read", "view", "open", "cat")
_CONTEXT_LINES = 15


@dataclass(frozen=True, slots=True)
class Call:
    """An exact call: a tool that exists in the request and arguments for it."""

    name: str
    arguments: Mapping[str, Any]

    def render(self) -> str:
        """The call as an instruction names it: its arguments held to one value each (those the
        model writes or picks, `Shaped` and `OneOf`, are named in words beside it)."""
        named = {k: v for k, v in self.arguments.items() if not isinstance(v, Shaped | OneOf)}
        return f"call {self.name} with {orjson.dumps(named).decode()}"


@dataclass(frozen=True, slots=True)
class Shaped:
    """An argument the model writes, held to a regular expression (a call schema's `pattern`)."""

    pattern: str


@dataclass(frozen=True, slots=True)
class OneOf:
    """An argument the model picks among these values (a call schema's `enum`)."""

    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Reader:
    name: str
    path_arg: str
    fixed: Mapping[str, str]
    range_style: str | None
    """"view_range" ([start, end]), "offset" (offset/limit), "lines" (start_line/end_line) or None."""


@dataclass(frozen=True, slots=True)
class _Editor:
    name: str
    path_arg: str
    old_arg: str
    new_arg: str
    fixed: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class _Shell:
    name: str
    arg: str
    array: bool


def _properties(tool: Mapping[str, Any]) -> tuple[str, dict[str, Any], list[str]]:
    function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
    name = function.get("name") if isinstance(function, dict) else None
    params = function.get("parameters") if isinstance(function, dict) else None
    props = params.get("properties") if isinstance(params, dict) else None
    required = params.get("required") if isinstance(params, dict) else None
    return (
        name if isinstance(name, str) else "",
        props if isinstance(props, dict) else {},
        [r for r in required if isinstance(r, str)] if isinstance(required, list) else [],
    )


def _path_arg(props: Mapping[str, Any]) -> str | None:
    return next((p for p in PATH_ARGS if p in props), None)


def _range_style(props: Mapping[str, Any]) -> str | None:
    if "view_range" in props:
        return "view_range"
    if "offset" in props and "limit" in props:
        return "offset"
    if "start_line" in props and "end_line" in props:
        return "lines"
    return None


@dataclass(frozen=True, slots=True)
class Vocabulary:
    reader: _Reader | None
    shell: _Shell | None
    tools: frozenset[str]
    editor: _Editor | None = None

    def edit(self, path: str, old: str, *, held: bool = False) -> Call | None:
        """The call that replaces `old` (lines the agent saw in `path`) in `path`; the new code is
        the model's to write (`new_arg` names its argument). `held`: for a call schema, not for
        words: the new code shaped to keep the definitions `old` has (`kept.definitions_kept`)."""
        if self.editor is None:
            return None
        e = self.editor
        arguments: dict[str, Any] = {**e.fixed, e.path_arg: path, e.old_arg: old}
        if held and (kept := definitions_kept(old)) is not None:
            arguments[e.new_arg] = Shaped(kept)
        return Call(e.name, arguments)

    def change_one(self, path: str, lines: Sequence[str], tried: Sequence[str] = ()) -> Call | None:
        """The editor's call that changes one of `lines` (whole lines of `path`, each once in it):
        the text to replace one of them, the replacement any text but one of them (`unlike`): asked
        for the lines "as they should be", the model wrote them back unchanged (issue 51); nor one
        of `tried` (lines the failure was already seen with: `pointed.tried_lines`, issue 61).
        None without an editor, or lines a pattern cannot hold."""
        pattern = unlike((*lines, *tried)) if lines else None
        if self.editor is None or pattern is None:
            return None
        e = self.editor
        return Call(e.name, {**e.fixed, e.path_arg: path, e.old_arg: OneOf(tuple(lines)), e.new_arg: Shaped(pattern)})

    @property
    def old_arg(self) -> str | None:
        """The editor's argument for the text to replace."""
        return self.editor.old_arg if self.editor is not None else None

    @property
    def new_arg(self) -> str | None:
        """The editor's argument for the replacement code."""
        return self.editor.new_arg if self.editor is not None else None

    def read(self, path: str, line: int | None = None) -> Call | None:
        """The call that shows `path` (around `line` when given): the read tool, else the shell."""
        start = max(1, line - _CONTEXT_LINES) if line else None
        end = line + _CONTEXT_LINES if line else None
        if self.reader is not None:
            args: dict[str, Any] = {**self.reader.fixed, self.reader.path_arg: path}
            if start is not None and end is not None:
                if self.reader.range_style == "view_range":
                    args["view_range"] = [start, end]
                elif self.reader.range_style == "offset":
                    args.update(offset=start, limit=end - start + 1)
                elif self.reader.range_style == "lines":
                    args.update(start_line=start, end_line=end)
            return Call(self.reader.name, args)
        if start is not None:
            return self.run(f"sed -n '{start},{end}p' {path}")
        return self.run(f"cat {path}")

    def shell_edit(self, path: str, lines: str | None = None) -> Call | None:
        """A change to `path` through the one shell, its command shaped as an in-place `sed` of
        that file and left for the model to write (the shell takes any command: an edit is all
        the proxy can ask of its form). Its script is one single-quoted substitution (held to
        `s/`: left free, the model deleted the function, `sed -i '1,3d' leap.py`): with any text
        allowed before the file (`.*`), llama.cpp's grammar let the model write past the name
        it was held to, to the test's, and run on to the token limit (vowels stuck point, 10
        seeds: 6 of 10 cut at 256 tokens; quoted, 9 of 9 edits named vowels.py). On one line
        (`SED_SCRIPT`): a line break inside an `s` command is a script sed rejects unterminated
        (recovery bench, bank and vowels: multi-line replacements sent turn after turn), and
        whole: `s/old/new/`, its last delimiter included (held to a script with no quote, the
        model ended it at the quote it meant to put in the new text, `...ch != ' vowels.py`,
        and sed rejected it unterminated: 11 of 19 edits that did not apply, recovery bench seed
        0 at 15c22ac). Given `lines` (the lines to change, as the agent last saw them), the text
        to replace is one of them as the file has it (`held_script`): left free, the model wrote
        a line the file does not have, `s/return self.items.pop(0)/.../` for `item =
        self.items.pop(0)`, four times (recovery bench, stack seed 1 at ba6fdd1)."""
        if self.shell is None or self.shell.array:
            return None
        script = held_script(lines) if lines is not None else SED_SCRIPT
        return Call(self.shell.name, {self.shell.arg: Shaped(f"^sed -i '{script}' {_operand(path)}$")})

    def run(self, command: str) -> Call | None:
        """The call that runs a shell command, in the shell tool's own argument shape."""
        if self.shell is None:
            return None
        value: Any = ["bash", "-lc", command] if self.shell.array else command
        return Call(self.shell.name, {self.shell.arg: value})


def _operand(path: str) -> str:
    """`path` as a command's last operand may name it, as a pattern: as written, or (an absolute
    path) by its name alone, from its folder; never another file of that name (asked for an edit
    of `vowels.py` by its name alone, the model edited `tests/test_vowels.py` and a
    `tests/vowels.py` that does not exist)."""
    relative = path.rsplit("/", 1)[-1] if path.startswith("/") else path.removeprefix("./")
    forms = [re.escape(path)] if path.startswith("/") else []
    return "(" + "|".join([*forms, r"(\./)?" + re.escape(relative)]) + ")"


class Learnt:
    """A request's tools and their vocabulary, learnt the first time something asks for it: the
    remedies, a force, the block rung's refuser and the gates all read this one, so a request
    learns it at most once, and only when one of them needs it."""

    __slots__ = ("_classifier", "_vocabulary", "tools")

    def __init__(self, tools: Sequence[Any] | None, classifier: Classifier) -> None:
        self.tools = tools
        self._classifier = classifier
        self._vocabulary: Vocabulary | None = None

    @property
    def vocabulary(self) -> Vocabulary:
        if self._vocabulary is None:
            self._vocabulary = learn_vocabulary(self.tools, self._classifier)
        return self._vocabulary


def learn_vocabulary(tools: Sequence[Any] | None, classifier: Classifier) -> Vocabulary:
    """What the request's tools offer for reading and running, by the policy's classification."""
    readers: list[tuple[int, _Reader]] = []
    shell: _Shell | None = None
    editor: _Editor | None = None
    names: set[str] = set()
    for tool in tools or ():
        if not isinstance(tool, dict):
            continue
        name, props, required = _properties(tool)
        if not name:
            continue
        names.add(name)
        fixed_kind, kind_arg, values, shell_arg = classifier.rule_of(name)
        path = _path_arg(props)
        if editor is None:
            editor = _editor(name, props, path, fixed_kind, kind_arg, values)
        if kind_arg and path:
            view = next((v for v, k in values.items() if k is CallKind.READ), None)
            if view is not None:
                readers.append((0, _Reader(name, path, {kind_arg: view}, _range_style(props))))
                continue
        if fixed_kind is CallKind.READ and path:
            preference = 1 if any(w in name.lower() for w in _READ_WORDS) else 2
            readers.append((preference, _Reader(name, path, {}, _range_style(props))))
            continue
        arg = shell_arg if shell_arg in props else next((a for a in classifier.command_args if a in props), None)
        if shell is None and arg is not None and (shell_arg or fixed_kind is None) and not set(required) - {arg}:
            schema = props.get(arg)
            array = isinstance(schema, dict) and schema.get("type") == "array"
            shell = _Shell(name, arg, array)
    readers.sort(key=lambda item: item[0])
    return Vocabulary(readers[0][1] if readers else None, shell, frozenset(names), editor)


def _editor(
    name: str,
    props: Mapping[str, Any],
    path: str | None,
    fixed_kind: CallKind | None,
    kind_arg: str | None,
    values: Mapping[str, CallKind],
) -> _Editor | None:
    """A tool that replaces old code with new in a file: an edit kind, a path, an old and a new
    text argument; for a tool whose one argument picks what it does, the edit value that names
    a replacement."""
    old = next((a for a in OLD_ARGS if a in props), None)
    new = next((a for a in NEW_ARGS if a in props), None)
    if path is None or old is None or new is None:
        return None
    if fixed_kind is CallKind.EDIT:
        return _Editor(name, path, old, new, {})
    if kind_arg is None:
        return None
    replace = next((v for v, k in values.items() if k is CallKind.EDIT and "replace" in v), None)
    return None if replace is None else _Editor(name, path, old, new, {kind_arg: replace})
