"""An in-place `sed` substitution read as plain text: `sed -i 's/old/new/g' file` as the text it
looks for and the text it writes, when both are literal (no character the pattern or the
replacement would read as more than itself). What the block rung needs to tell, before the
command runs, that it cannot change anything: its two sides equal, or its pattern absent from
the file as the agent last saw it.

    sed -i 's/return a - b/return a + b/' calc.py     -> ("return a - b", "return a + b")
    sed -i.bak -e 's|x = 1|x = 2|g' f.py               -> ("x = 1", "x = 2")
    sed -i 's/a/\\1/' f.py, sed -i 's/a*b/c/' f.py      -> None (a pattern or replacement that is not literal)
    sed -i 's/a.b/c/' f.py                            -> looks for `a`, any character, `b` (`Sought.wild`);
                                                         no plain text to write (`substitution`: None)
    sed -i 's/a/b/; s/c/d/' f.py, sed -n 1,5p f.py     -> None (not one substitution in place)
    sed -i 's/def f():\\n    pass/x/' f.py            -> never matches (`never_matches`: sed reads a line
                                                         at a time, without its line break)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from proxy.engine.reading.shell import split_segments, words

__all__ = ["Sought", "never_matches", "rejected_because", "script_refused", "sought", "substitution"]

_BASIC = frozenset(".[]*^$\\")
"""What a basic regular expression reads as more than itself."""
_EXTENDED = _BASIC | frozenset("()+?{}|")
"""... and an extended one (`-E`, `-r`)."""
_FLAGS = re.compile(r"^g?$")
_NUMBERED = re.compile(r"^ *\d+\t")
"""An editor's view numbers each line (`cat -n`, OpenHands' view): the number and a tab."""


def substitution(command: str) -> tuple[str, str] | None:
    """The literal (pattern, replacement) of the one in-place `sed` substitution `command` runs;
    None when it runs none, several, or one that is not literal."""
    found = _the_one(command, anchors=False)
    return None if found is None else (found[0], found[1])


@dataclass(frozen=True, slots=True)
class Sought:
    """The text an in-place substitution looks for: literal, perhaps held to a line's start (`^`)
    or end (`$`)."""

    text: str
    start: bool = False
    end: bool = False
    wild: bool = False
    """Its `.` match any character (a basic expression's one special character it has)."""

    def found_in(self, shown: str) -> bool:
        """Whether a file that reads `shown` (as `cat` prints it, or an editor's numbered view) has
        it; in doubt (a line that may or may not carry a view's number), it has."""
        if self.wild:
            return self._matched_in(shown)
        if not (self.start or self.end):
            return self.text in shown
        for raw in shown.splitlines():
            for line in {raw, _NUMBERED.sub("", raw, count=1)}:  # a line of a numbered view, either way
                at_start = line.startswith(self.text) if self.start else self.text in line
                if at_start and (not self.end or line.endswith(self.text)):
                    return True
        return False

    def pattern(self) -> re.Pattern[str]:
        """It as a pattern: its text literal but for `.` (the growth test builds one too)."""
        body = ".".join(re.escape(part) for part in self.text.split("."))
        return re.compile(("^" if self.start else "") + body + ("$" if self.end else ""))

    def _matched_in(self, shown: str) -> bool:
        """`found_in` for a pattern with `.`: matched line by line, as sed reads a file."""
        pattern = self.pattern()
        lines = shown.splitlines()
        return any(pattern.search(line) for raw in lines for line in {raw, _NUMBERED.sub("", raw, count=1)})


def sought(command: str) -> Sought | None:
    """What the one in-place `sed` substitution `command` runs looks for, when it is literal but
    for a leading `^` and a trailing `$` (`s/^return x$/return y/`); None otherwise."""
    found = _the_one(command, anchors=True)
    if found is None:
        return None
    pattern, _replacement, start, end = found
    return Sought(pattern, start, end, "." in pattern)


_OPERATORS = {False: frozenset("*["), True: frozenset("*[?+{|()")}
"""What makes a pattern more than a run of single characters, unescaped, basic (False) or extended."""
_ESCAPED_OPERATORS = {False: frozenset("?+{|()"), True: frozenset()}
"""... and escaped (GNU's basic `\\?`, `\\+`, `\\{`, `\\|`, `\\(`)."""


def never_matches(command: str) -> bool:
    """`command` is one in-place `sed` substitution whose pattern cannot match: a run of single
    characters (literal, escaped, `.`, anchors) of which one is `\\n`, a line break. sed reads a
    file a line at a time, its line break taken off, and a script of one `s` joins no lines
    (`-z` is not taken here): nothing is written. A pattern with a repeat, a bracket, a group or
    an alternative may match without the line break, and is not read. Seen from
    Qwen2.5-Coder-1.5B (recovery bench, stack): `s/^    def pop(self):\\n        item = ...$/.../`,
    three times in one run, each taken for an edit and the test re-run after it."""
    argv = _sole_sed(command) if "\\n" in command else None
    found = _in_place_script(argv) if argv is not None else None
    if found is None:
        return False
    script, extended = found
    delimiter = _delimiter(script)
    return delimiter is not None and _breaks_line(script[2:], delimiter, extended)


def _breaks_line(rest: str, delimiter: str, extended: bool) -> bool:
    """The pattern at the head of an `s` script's `rest` (up to its unescaped `delimiter`) is single
    characters only, one of them `\\n`, and the script is that one substitution whole."""
    newline, i = False, 0
    while i < len(rest) and rest[i] != delimiter:
        if rest[i] == "\\":
            if i + 1 == len(rest) or rest[i + 1] in _ESCAPED_OPERATORS[extended]:
                return False
            newline = newline or rest[i + 1] == "n"
            i += 2
            continue
        if rest[i] in _OPERATORS[extended]:
            return False
        i += 1
    if not newline or i == len(rest):
        return False
    tail = rest[i + 1 :]  # the replacement and the flags
    j = 0
    while j < len(tail) and tail[j] != delimiter:
        j += 2 if tail[j] == "\\" else 1
    return j < len(tail) and bool(_FLAGS.match(tail[j + 1 :]))


def _the_one(command: str, anchors: bool) -> tuple[str, str, bool, bool] | None:
    argv = _sole_sed(command)
    found = _in_place_script(argv) if argv is not None else None
    return None if found is None else _literal(found[0], _EXTENDED if found[1] else _BASIC, anchors)


def _sole_sed(command: str) -> list[str] | None:
    """The words of the one `sed` that `command` runs; None when it runs none or several."""
    if "sed" not in command:
        return None
    seds = [argv for argv in (words(part) for part, _line, _piped in split_segments(command)) if _is_sed(argv)]
    return seds[0] if len(seds) == 1 else None


def _is_sed(argv: list[str]) -> bool:
    return bool(argv) and argv[0].rsplit("/", 1)[-1] == "sed"


def _in_place_script(argv: list[str]) -> tuple[str, bool] | None:
    """The script of one `sed` run in place on a file, with no option but `-e`, `-E` or `-r`, and
    whether it is an extended expression; None otherwise."""
    options = [w for w in argv[1:] if w.startswith("-")]
    operands = [w for w in argv[1:] if not w.startswith("-")]
    if not any(o.startswith(("-i", "--in-place")) for o in options) or len(operands) < 2:
        return None
    if any(o not in ("-e", "-E", "-r") and not o.startswith(("-i", "--in-place")) for o in options):
        return None
    if options.count("-e") > 1:
        return None
    return operands[0], "-E" in options or "-r" in options


def _delimiter(script: str) -> str | None:
    """The delimiter of a script that is an `s` command (`s/old/new/`, `s|old|new|`); None otherwise."""
    if len(script) < 4 or script[0] != "s" or script[1].isalnum() or script[1] in "\\\n":
        return None
    return script[1]


def _literal(script: str, special: frozenset[str], anchors: bool) -> tuple[str, str, bool, bool] | None:
    delimiter = _delimiter(script)
    if delimiter is None:
        return None
    parts = script[2:].split(delimiter)
    if len(parts) != 3 or not _FLAGS.match(parts[2]):
        return None
    pattern, replacement = parts[0], parts[1]
    start = anchors and pattern.startswith("^")
    end = anchors and pattern.endswith("$") and not pattern.endswith("\\$")
    pattern = pattern[1 if start else 0 : -1 if end else None]
    special = special - {"."} if anchors else special  # what it looks for, `.` and all; what it writes, plain
    if not pattern or special & set(pattern) or "\\" in replacement or "&" in replacement or "\n" in script:
        return None
    return pattern, replacement, start, end


_REJECTIONS = (
    (
        "unterminated `s' command",
        "sed's `s` command is `s/old/new/` on one line: this one lacks its closing `/`, or a line break "
        "inside it ended it (sed cannot take one there: write a file of several lines whole instead)",
    ),
    (
        "unknown option to `s'",
        "a `/` inside the old or the new text ended it early: write that `/` as `\\/`, or use another "
        "delimiter (`s|old|new|`)",
    ),
    ("unterminated address regex", "a `/` inside its address ended it early: write it as `\\/`"),
)
"""GNU sed's complaints about a script it could not parse, and what causes each."""
_COMPILE = re.compile(r"^sed: -e expression #\d+, char \d+: (?P<why>.+)$", re.MULTILINE)
"""Any complaint GNU sed makes while it reads its script, before it opens a file: the others
(a pattern it cannot compile: `Invalid range end` for `[::-1]`, `Unmatched ( or \\(`...)."""


def rejected_because(output: str) -> str | None:
    """Why sed refused to parse the script, as a fix can be told from its complaint (else in
    sed's own words); None when the output holds no complaint about the script."""
    if "sed: " not in output:
        return None
    known = next((cause for complaint, cause in _REJECTIONS if complaint in output), None)
    if known is not None:
        return known
    other = _COMPILE.search(output)
    return f"sed cannot compile it ({other['why'].strip()})" if other else None


def script_refused(command: str, output: str) -> bool:
    """`command` is one `sed` (after `cd`s, if any) whose script sed refused to parse: GNU sed
    reads its whole script before it opens a file, so nothing was written. Not so for a sed that
    failed on one of its files (`can't read`): it may have changed the others."""
    if rejected_because(output) is None:
        return False
    argvs = [words(part) for part, _line, _piped in split_segments(command)]
    return sum(_is_sed(argv) for argv in argvs) == 1 and all(_is_sed(argv) or argv[:1] == ["cd"] for argv in argvs)
