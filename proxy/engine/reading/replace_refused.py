"""An editor that turned a replace down for its text to replace: the same text meets the same answer.

A replace-style editor (`old_str`/`new_str`, `old_string`/`new_string`, a SEARCH/REPLACE block)
looks for its text to replace in the file and refuses the edit when that text is not there, or
is there more than once. Neither depends on the replacement: sent again on the file as it was,
with the same text to replace and any replacement, the edit is refused the same way (recovery
bench, train part: bank seed 2 in the fifteenth run, block off, one `old_str` sent three times
with three replacements, none applied).

Must never read as such a refusal: one for the replacement (OpenHands' "`new_str` and `old_str`
must be different", Claude Code's "No changes to make"), a file that is not there or not read
yet, the editor's syntax check turning the edit down (its text was found: another replacement
may pass); output of anything but the edit (a test that prints "not found").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import xxhash

from proxy.engine.outputs.excerpt import file_text
from proxy.engine.reading.proposal import NEW_ARGS, OLD_ARGS

__all__ = ["absent", "more_than_once", "text_refused", "without_replacement"]

_TEXT_REFUSED = re.compile(
    r"\bdid not appear verbatim\b|"  # OpenHands: no replacement was performed, old_str `x` did not appear verbatim
    r"\bstring to replace not found\b|"  # Claude Code's Edit
    r"\bold_str\b[^\n]{0,400}?\bappears \d+ times\b|"  # the recovery bench's editor
    r"\bmultiple occurrences of old_str\b|"  # OpenHands
    r"\bfound \d+ matches of the string to replace\b|"  # Claude Code, `replace_all` false
    r"\bmust appear exactly once\b|"  # goose's text editor
    r"\bsearch block\b[\s\S]{0,1500}?\bdoes not match anything\b",  # Cline's replace_in_file, the block between
    re.IGNORECASE,
)
_MORE_THAN_ONCE = re.compile(
    r"\bappears \d+ times\b|\bmultiple occurrences\b|\bfound \d+ matches\b|\bappears multiple times\b", re.IGNORECASE
)
_HEAD = 2000
"""The refusal is the result's first words: only its head is read."""


def text_refused(output: str) -> bool:
    """The editor refused the edit for its text to replace: not in the file, or in it more than once."""
    return bool(_TEXT_REFUSED.search(output[:_HEAD]))


def more_than_once(output: str) -> bool:
    """... because it is in the file more than once (any lines of it are there as often)."""
    return bool(_MORE_THAN_ONCE.search(output[:_HEAD]))


def without_replacement(tool: str, arguments: Mapping[str, Any] | None) -> str:
    """A replace-style edit without its replacement (its tool, and every other argument: the file,
    the text to replace, options such as `replace_all`), digested; empty for any other call."""
    given = dict(arguments or {})
    if not any(isinstance(given.get(k), str) for k in OLD_ARGS):
        return ""
    kept = sorted((k, repr(v)) for k, v in given.items() if k not in NEW_ARGS)
    return xxhash.xxh3_64_hexdigest(repr((tool, kept)).encode("utf-8", "replace"))


_NUMBER = re.compile(r"^[^\S\n]*\d+(?:\t|\u2192)", re.MULTILINE)
"""A read's line number (`cat -n`'s tab, Claude Code's arrow)."""
_SPACE = re.compile(r"\s+")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def _loose(text: str) -> str:
    return _SPACE.sub(" ", text.translate(_QUOTES)).strip()


def absent(text: str, shown: str) -> bool:
    """No editor finds `text` in a file a read `shown` whole: it is not there even with every run of
    whitespace taken as one space and curly quotes as straight ones (editors that match loosely,
    a read's line numbers left on or taken off). Empty text is never absent."""
    wanted = _loose(text)
    if not wanted:
        return False
    return wanted not in _loose(file_text(shown)) and wanted not in _loose(_NUMBER.sub("", shown))
