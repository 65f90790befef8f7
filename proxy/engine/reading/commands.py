"""A shell command read by its structure: what it runs, what it writes, what code it carries.

Agents send whole scripts as one command: a here-document that writes a test file, an inline
Python probe whose code is full of `>` and `;`, `cd` and `export` before the real command. A
regular expression over the raw text takes a comparison in the probe for a redirect and a
line of the here-document for a command of its own. So the command is read the way a shell
reads it, well enough for what the proxy needs:

    here-documents   their bodies are taken out first (they are data, not commands); each is
                     kept as the input of the segment that reads it
    segments         split on `&&`, `||`, `;`, `|` and newlines outside quotes; leading noise
                     (`cd`, `export`, `VAR=value`, `timeout N`, `time`, `sudo`, `nohup`) dropped;
                     a shell given its command as a string (`bash -lc '...'`) is read as that command
    writes           the targets of `>`, `>>`, `&>`, `tee`, `cp`, `mv` and `truncate` (never
                     `/dev/null` nor `&1`), whole-file; of `sed -i` and `perl -i`, in place;
                     a copy the agent kept put back (`cp f.py.bak f.py`) is a restore; the files
                     `git checkout` and `git restore` name (`gitwrites.py`)
    removals         `rm`'s operands, and what `mv` moves away
    inline code      an interpreter given its program on the command line (`python -c`) or on
                     its standard input (`python - <<EOF`, `python3 <<EOF`): a probe; the files
                     a Python program writes are read from its code (`pywrites.py`); those it
                     writes under an `if` are kept aside, for its output to tell (`guarded`)
    script           a program file it runs (`python path.py`, `./run.sh`, `bash x.sh`, `bin/test`)
    editor text      SWE-agent's editor commands (`edit 10:12`, `insert 5`, `append`) take the
                     lines after them, up to `end_of_edit`, as the text to put in the open file:
                     data like a here-document's body, never commands (a `>` in the code is no
                     redirect)

Linear in the command's length; anything it cannot follow is read as plain words, never raised.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from proxy.engine.reading.gitwrites import git_writes
from proxy.engine.reading.pywrites import Guarded, python_program
from proxy.engine.reading.shell import Operator, split_segments, take_heredocs
from proxy.engine.reading.shell import words as shell_words

__all__ = ["Command", "Segment", "Write", "read_command"]

_NOISE_WORDS = frozenset({"time", "sudo", "nohup", "command", "exec", "env"})
_SETS_DIR = frozenset({"cd", "pushd", "popd"})
_SETS_ENV = frozenset({"export", "source", ".", "set", "unset", "ulimit", "alias"})
_INTERPRETERS = re.compile(r"^(?:python[\d.]*|pypy[\d.]*|node|ruby|perl|php|Rscript|julia|deno|bun|ipython)$")
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_INLINE_FLAGS = {"python": ("-c",), "node": ("-e", "-p", "--eval"), "ruby": ("-e",), "perl": ("-e", "-E")}
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
_BACKUP = re.compile(r"(?:\.(?:bak|backup|orig|original|old|save|copy)\d*|~)$")
"""What a kept copy's name adds to the file's (`f.py.bak`, `f.py.orig`, `f.py~`)."""
_NULL_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_EDITOR_COMMAND = re.compile(r"\A[ \t]*+(?:edit[ \t]+\d+(?::\d+)?|insert[ \t]+\d+|append)[ \t]*(?:\n|$)")
"""SWE-agent's editor commands, alone on the first line: what follows is the text they put in the file.
Held to the text's start, so that searched anywhere it is still linear."""


@dataclass(frozen=True, slots=True)
class Write:
    """A file a command writes: whole (a redirect, `tee`, a new file) or in place (`sed -i`)."""

    path: str
    whole: bool
    restores: bool = False
    """It puts back a copy the agent kept of the same file (`cp f.py.bak f.py`): it undoes
    changes and makes none of its own."""


@dataclass(frozen=True, slots=True)
class Segment:
    """One simple command: its words (leading noise dropped) and the text they came from."""

    words: tuple[str, ...]
    text: str
    """The segment as written, here-document bodies taken out and leading noise dropped."""
    stdin: str = ""
    """The body of a here-document this segment reads."""
    script: str | None = None
    """The program file it runs, if it runs one."""
    inline: bool = False
    """It runs code given inline (an interpreter's `-c`, or its standard input)."""
    writes: tuple[Write, ...] = ()
    """The files this segment writes."""
    guarded: tuple[Guarded, ...] = ()
    """The files its inline Python program writes under an `if`, if its output tells that ran."""
    piped: bool = False
    """It reads the output of the segment before it (`pytest | tail -20`: `tail` does)."""

    @property
    def program(self) -> str:
        """The command's name, without its directory (`python3`, `pytest`, `runtests.py`)."""
        return self.words[0].rsplit("/", 1)[-1] if self.words else ""


@dataclass(frozen=True, slots=True)
class Command:
    segments: tuple[Segment, ...]
    writes: tuple[Write, ...]
    removes: tuple[str, ...]

    @property
    def inline(self) -> bool:
        """Some segment runs code given inline (an interpreter's `-c`, or its standard input)."""
        return any(s.inline for s in self.segments)

    @property
    def guarded(self) -> tuple[Guarded, ...]:
        return tuple(g for s in self.segments for g in s.guarded)

    @property
    def scripts(self) -> tuple[str, ...]:
        """Program files some segment runs."""
        return tuple(s.script for s in self.segments if s.script is not None)


def _without_noise(words: list[str]) -> list[str]:
    at = 0
    while at < len(words):
        word = words[at]
        if _ASSIGNMENT.match(word) or word in _NOISE_WORDS or word in ("(", "{", "!"):
            at += 1
        elif word == "timeout":
            at += 1
            while at < len(words) and (words[at].startswith("-") or words[at][:1].isdigit()):
                at += 1
        else:
            break
    return words[at:]


def _redirects(words: list[str]) -> tuple[list[str], list[Write]]:
    """The words without redirections (operators and their targets), and the files written."""
    kept: list[str] = []
    writes: list[Write] = []
    at = 0
    while at < len(words):
        word = words[at]
        operator = word.lstrip("12&")
        if not isinstance(word, Operator) or not operator or operator[0] not in "<>":
            kept.append(word)
            at += 1
            continue
        target = words[at + 1] if at + 1 < len(words) else ""
        duplicates = operator.endswith("&")  # `2>&1`, `>&2`: the next word is a descriptor, no file
        at += 2  # the operator and its operand (a descriptor left behind read as an argument)
        if operator.startswith(">") and not duplicates and target and target not in _NULL_TARGETS:
            writes.append(Write(target, True))
    return kept, writes


def _file_operands(words: list[str]) -> list[str]:
    return [w for w in words[1:] if not w.startswith("-") and w not in ("--",)]


def _restores(source: str, target: str) -> bool:
    """`source` is a kept copy of `target` (`f.py.bak` of `f.py`, `/testbed/f.py.orig` of `f.py`)."""
    kept = _BACKUP.search(source)
    base = source[: kept.start()] if kept else ""
    return bool(base) and (base == target or base.endswith("/" + target) or target.endswith("/" + base))


def _segment_writes(words: list[str]) -> tuple[list[Write], list[str]]:
    """In-place edits, `tee` targets and `rm` operands of one segment's words."""
    program = words[0].rsplit("/", 1)[-1] if words else ""
    if program in ("sed", "perl") and any(w.startswith("-i") or (w.startswith("-") and "i" in w[1:]) for w in words):
        script_seen, skip = program == "perl", False
        targets = []
        for word in words[1:]:
            if skip or word.startswith("-"):  # a flag, or perl's program after its `-e` (`-pe`)
                skip = not skip and program == "perl" and _inline_flag(word, _INLINE_FLAGS["perl"])
                continue
            if not script_seen:
                script_seen = True  # sed's script comes first
                continue
            targets.append(word)
        return [Write(t, False) for t in targets], []
    if program == "tee":
        return [Write(t, True) for t in _file_operands(words) if t not in _NULL_TARGETS], []
    if program == "rm":
        return [], _file_operands(words)
    if program in ("cp", "mv", "install") and len(_file_operands(words)) >= 2:
        operands = _file_operands(words)
        restores = len(operands) == 2 and _restores(operands[0], operands[1])
        return [Write(operands[-1], True, restores)], operands[:-1] if program == "mv" else []
    if program == "create" and len(words) == 2:  # SWE-agent's editor: a new file, opened
        return [Write(words[1], True)], []
    if program == "git":
        # a tracked file: another revision's text is a change of the sources, never a new file
        return [Write(path, restores, restores) for path, restores in git_writes(words)], []
    if program == "truncate":
        return [Write(t, True) for t in _file_operands(words) if not t[:1].isdigit()], []
    return [], []


def _runs(words: list[str], stdin: str) -> tuple[str | None, str | None]:
    """(the code it runs given inline, None when it runs none; the program file it runs) for one
    segment. Inline code is an interpreter's `-c`-style operand, or its standard input."""
    if not words:
        return None, None
    program = words[0].rsplit("/", 1)[-1]
    if _INTERPRETERS.match(program) or program in _SHELLS:
        flags = _INLINE_FLAGS.get("python" if _python(program) else program, ())
        operands = [w for w in words[1:] if not w.startswith("-")]
        given = next((at for at, w in enumerate(words[1:], 1) if _inline_flag(w, flags, not _python(program))), None)
        if given is not None:
            return (words[given + 1] if given + 1 < len(words) else ""), None
        if "-m" in words[1:]:
            return None, None
        if stdin or not operands or operands[0] == "-":
            return stdin, None  # its program comes on its standard input
        return None, operands[0]
    if "/" in words[0] or words[0].endswith((".py", ".sh")):
        return None, words[0]
    return None, None


def _inline_flag(word: str, flags: tuple[str, ...], bundled: bool = True) -> bool:
    """A flag giving the program inline: one of `flags`, or (`bundled`) letters ending in one (`-pe`)."""
    ends = bundled and word[:1] == "-" and word[1:-1].isalnum()
    return word in flags or (ends and any(len(f) == 2 and word[-1] == f[1] for f in flags))


def _python(program: str) -> bool:
    return program.startswith(("python", "pypy", "ipython"))


_REMEMBERED_CHARS = 2000
"""Commands up to this long are remembered once read (at most 1024 of them)."""


def read_command(command: str) -> Command:
    """`command` read by its structure (see the module's docstring). A pure function of the
    text, remembered for short commands: the same command is read by the classifier and the
    failure model, turn after turn (an agent runs its check again and again)."""
    return _remembered(command) if len(command) <= _REMEMBERED_CHARS else _read(command)


@lru_cache(maxsize=1024)
def _remembered(command: str) -> Command:
    return _read(command)


def _shell_string(words: list[str]) -> str | None:
    """The command a shell is given as a string (`bash -lc 'pytest -q'`, `sh -c "..."`), if it is."""
    if words[0].rsplit("/", 1)[-1] not in _SHELLS:
        return None
    for at, word in enumerate(words[1:-1], 1):
        if not word.startswith("-") or word.startswith("--"):
            return None
        if "c" in word[1:]:
            return words[at + 1]
    return None


def _read(command: str, depth: int = 0) -> Command:
    editor = _EDITOR_COMMAND.match(command)
    if editor is not None:
        head = editor.group(0).strip()
        body = command[editor.end() :].removesuffix("\n").removesuffix("end_of_edit").removesuffix("\n")
        return Command((Segment(tuple(head.split()), head, body),), (), ())
    text, bodies = take_heredocs(command)
    segments: list[Segment] = []
    writes: list[Write] = []
    removes: list[str] = []
    for part, line, piped in split_segments(text):
        words = _without_noise(shell_words(part))
        if not words or words[0] in _SETS_DIR or words[0] in _SETS_ENV:
            continue
        words, redirected = _redirects(words)
        if not words:
            writes.extend(redirected)
            continue
        inner = _shell_string(words) if depth < 3 else None
        if inner is not None:  # read as the command it runs: `bash -lc 'pytest'` runs pytest
            wrapped = _read(inner, depth + 1)
            segments.extend(wrapped.segments)
            writes.extend((*redirected, *wrapped.writes))
            removes.extend(wrapped.removes)
            continue
        stdin = bodies.pop(line, "") if "<<" in part else ""
        in_place, removed = _segment_writes(words)
        code, script = _runs(words, stdin)
        python = code if code and _python(words[0].rsplit("/", 1)[-1]) else ""
        program = python_program(python)
        coded = [Write(path, whole) for path, whole in program.writes]
        written = (*redirected, *in_place, *coded)
        writes.extend(written)
        removes.extend(removed)
        text = _strip_noise(part.lstrip())
        segments.append(Segment(tuple(words), text, stdin, script, code is not None, written, program.guarded, piped))
    return Command(tuple(segments), tuple(writes), tuple(removes))


def _strip_noise(text: str) -> str:
    """The segment's text from its program on (assignments, `time`, `timeout N` dropped)."""
    words = text.split()
    kept = _without_noise(words)
    return " ".join(kept) if len(kept) != len(words) else text.strip()
