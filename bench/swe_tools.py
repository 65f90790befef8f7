"""SWE-agent 0.x's file viewer and editor commands, inside one `bash` tool, for the tiny agent's
`sweagent` style (`bench/tiny_agent.py`).

SWE-agent 0.x gives its model a shell in which a few commands of its own move a window over one
open file (`open`, `goto`, `scroll_down`, `scroll_up`), search (`search_dir`, `search_file`,
`find_file`), create a file (`create`) and replace lines of the open file (`edit N:M` ... `end_of_edit`,
turned down when the result does not compile), and `submit` ends the run. Open-weight models on
that scaffold loop in ways a one-bash or editor agent does not: the same file opened again at line
1, paging, an edit the guard refuses sent again. This module reproduces the commands' behaviour
and the shape of what they print (the `[File: ...]` header, the lines above and below, the
`Found N matches` listings, the guard's "Your changes have NOT been applied"), because the proxy
reads those shapes as the real scaffold prints them; the wording around them is this module's own.

Every other command runs in the shell, its output as the shell printed it (or a line saying it
printed nothing); no exit status is shown, as in SWE-agent 0.x.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

WINDOW = 100
"""Lines the viewer shows at once (SWE-agent 0.x's default)."""
OVERLAP = 2
"""Lines a scroll keeps from the window before."""
MATCHES = 100
"""More matches than this in a search: the model is asked to narrow it."""
SUBMIT = "submit"
DOCS = """Besides ordinary shell commands, this shell has these commands:
  open <path> [<line>]          open a file and show a window of 100 lines (around <line> if given)
  goto <line>                   move the window of the open file to <line>
  scroll_down / scroll_up       move the window of the open file down or up
  create <path>                 create a new empty file and open it
  search_dir <term> [<dir>]     list the files that contain <term>
  search_file <term> [<path>]   list the lines of a file (default: the open file) that contain <term>
  find_file <name> [<dir>]      find files by name (wildcards allowed)
  edit <start>:<end>            replace lines <start> to <end> of the open file with the lines that follow,
  <replacement lines>           up to a line `end_of_edit` (indentation matters)
  end_of_edit
  submit                        submit your change when the task is done"""


@dataclass
class Viewer:
    """The scaffold's state between calls: the open file and the window's first line."""

    root: Path
    shell: Callable[[str], str]
    """Runs an ordinary command in the repository and returns what it printed."""
    path: Path | None = None
    first: int = 1
    edited: bool = field(default=False)

    def footer(self) -> str:
        shown = str(self.path) if self.path is not None else "n/a"
        return f"(Open file: {shown})\n(Current directory: {self.root})"

    def run(self, command: str) -> tuple[str, bool]:
        """(what the command printed, followed by the viewer's state; the run is over)."""
        head = command.strip().split(None, 1)
        word = head[0] if head else ""
        if word == SUBMIT:
            return "Submitted.", True
        handlers = {
            "open": self._open, "goto": self._goto, "scroll_down": self._scroll_down, "scroll_up": self._scroll_up,
            "create": self._create, "edit": self._edit, "search_dir": self._search_dir,
            "search_file": self._search_file, "find_file": self._find_file,
        }  # fmt: skip
        if word in handlers:
            body = handlers[word](command.strip()[len(word) :])
        else:
            printed = self.shell(command)
            body = printed if printed.strip() else "Your command ran successfully and did not produce any output."
        return f"{body}\n{self.footer()}", False

    def _resolve(self, raw: str) -> Path | None:
        path = (self.root / raw).resolve()
        return path if path == self.root or self.root in path.parents else None

    def _lines(self) -> list[str]:
        return self.path.read_text().splitlines() if self.path is not None and self.path.is_file() else []

    def window(self) -> str:
        lines = self._lines()
        total = len(lines)
        self.first = max(1, min(self.first, max(1, total - WINDOW + 1)))
        last = min(total, self.first + WINDOW - 1)
        shown = [f"[File: {self.path} ({total} lines total)]"]
        if self.first > 1:
            shown.append(f"({self.first - 1} more lines above)")
        shown += [f"{n}:{lines[n - 1]}" for n in range(self.first, last + 1)]
        if last < total:
            shown.append(f"({total - last} more lines below)")
        return "\n".join(shown)

    def _centre(self, line: int) -> None:
        self.first = line - WINDOW // 2

    def _open(self, rest: str) -> str:
        args = _words(rest)
        if not args:
            return "Usage: open <path> [<line>]"
        path = self._resolve(args[0])
        if path is None or not path.exists():
            return f"File {args[0]} not found"
        if path.is_dir():
            return f"Error: {args[0]} is a directory. You can only open files; use cd or ls to look in it."
        line = 1
        if len(args) > 1:
            if not args[1].isdigit():
                return "Usage: open <path> [<line>]\nError: <line> must be a number"
            line = int(args[1])
        self.path = path
        total = len(self._lines())
        if line > total > 0:
            line = total
        if len(args) > 1:
            self._centre(line)
        else:
            self.first = 1
        return self.window()

    def _goto(self, rest: str) -> str:
        if self.path is None:
            return "No file open. Use the open command first."
        if not rest.strip().isdigit():
            return "Usage: goto <line>"
        line, total = int(rest.strip()), len(self._lines())
        if line > total or line < 1:
            return f"Error: <line> must be between 1 and {total}"
        self._centre(line)
        return self.window()

    def _scroll_down(self, _rest: str) -> str:
        if self.path is None:
            return "No file open. Use the open command first."
        self.first += WINDOW - OVERLAP
        return self.window()

    def _scroll_up(self, _rest: str) -> str:
        if self.path is None:
            return "No file open. Use the open command first."
        self.first -= WINDOW - OVERLAP
        return self.window()

    def _create(self, rest: str) -> str:
        name = rest.strip()
        path = self._resolve(name) if name else None
        if path is None:
            return "Usage: create <path>"
        if path.exists():
            return f"Error: File '{name}' already exists.\n" + self._open(shlex.quote(name))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
        self.edited = True
        self.path, self.first = path, 1
        return self.window()

    def _search_dir(self, rest: str) -> str:
        args = _words(rest)
        if not args or len(args) > 2:
            return "Usage: search_dir <term> [<dir>]"
        term, where = args[0], self._resolve(args[1] if len(args) > 1 else ".")
        if where is None or not where.is_dir():
            return f"Directory {args[1] if len(args) > 1 else '.'} not found"
        counts = []
        for path in sorted(p for p in where.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            try:
                found = path.read_text().count(term)
            except (UnicodeDecodeError, OSError):
                continue
            if found:
                counts.append((path, found))
        if not counts:
            return f'No matches found for "{term}" in {where}'
        if len(counts) > MATCHES:
            return f'More than {MATCHES} files matched for "{term}" in {where}. Please narrow your search.'
        listed = "\n".join(f"{path} ({n} matches)" for path, n in counts)
        total = sum(n for _, n in counts)
        return f'Found {total} matches for "{term}" in {where}:\n{listed}\nEnd of matches for "{term}" in {where}'

    def _search_file(self, rest: str) -> str:
        args = _words(rest)
        if not args or len(args) > 2:
            return "Usage: search_file <term> [<path>]"
        path = self._resolve(args[1]) if len(args) > 1 else self.path
        if path is None:
            return "No file open. Use the open command first."
        if not path.is_file():
            return f"Error: File name {args[1]} not found. Please provide a valid file name."
        term = args[0]
        hits = [(n, line) for n, line in enumerate(path.read_text().splitlines(), 1) if term in line]
        if not hits:
            return f'No matches found for "{term}" in {path}'
        if len(hits) > MATCHES:
            return f'More than {MATCHES} lines matched for "{term}" in {path}. Please narrow your search.'
        listed = "\n".join(f"Line {n}:{line}" for n, line in hits)
        return f'Found {len(hits)} matches for "{term}" in {path}:\n{listed}\nEnd of matches for "{term}" in {path}'

    def _find_file(self, rest: str) -> str:
        args = _words(rest)
        if not args or len(args) > 2:
            return "Usage: find_file <name> [<dir>]"
        where = self._resolve(args[1] if len(args) > 1 else ".")
        if where is None or not where.is_dir():
            return f"Directory {args[1] if len(args) > 1 else '.'} not found"
        found = sorted(p for p in where.rglob(args[0]) if p.is_file() and "__pycache__" not in p.parts)
        if not found:
            return f'No matches found for "{args[0]}" in {where}'
        return f'Found {len(found)} matches for "{args[0]}" in {where}:\n' + "\n".join(str(p) for p in found)

    def _edit(self, rest: str) -> str:
        first_line, _, body = rest.partition("\n")
        span = re.fullmatch(r"\s*(\d+):(\d+)\s*", first_line)
        if span is None:
            return "Usage: edit <start>:<end>\n<replacement lines>\nend_of_edit"
        if self.path is None:
            return "No file open. Use the open command first."
        lines = body.split("\n")
        if "end_of_edit" in (line.strip() for line in lines):
            lines = lines[: [line.strip() for line in lines].index("end_of_edit")]
        start, end = int(span[1]), int(span[2])
        old = self._lines()
        if start < 1 or start > len(old) + 1 or end < start - 1:
            return f"Error: start and end must be lines of the file (1 to {len(old)}), start at most end."
        new = [*old[: start - 1], *lines, *old[end:]]
        text = "\n".join(new) + "\n"
        error = _compile_error(text, self.path)
        if error is not None:
            return (
                "Your proposed edit has introduced new syntax error(s). Read the error and retry the edit.\n\n"
                f"ERRORS:\n- {error}\n\n"
                "Your changes have NOT been applied. Fix your edit command and try again: either the start/end "
                "lines or the replacement text is wrong."
            )
        self.path.write_text(text)
        self.edited = True
        self._centre(start)
        return (
            self.window()
            + "\nFile updated. Review the changes (indentation, duplicate lines) and edit again if needed."
        )


def _words(rest: str) -> list[str]:
    """A command's arguments as the shell splits them; none where its quotes do not close (the
    command then answers with its usage, as for any argument it cannot take)."""
    try:
        return shlex.split(rest)
    except ValueError:
        return []


def _compile_error(text: str, path: Path) -> str | None:
    """Why a Python file's new text does not compile (the guard's check), None where it does or is not Python."""
    if path.suffix != ".py":
        return None
    try:
        compile(text, str(path), "exec")
    except SyntaxError as exc:
        return f"E999 {type(exc).__name__}: {exc.msg} (line {exc.lineno})"
    return None
