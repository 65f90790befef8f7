"""A shell command the shell could not parse: nothing of it ran.

`bash -c` reads a line whole before it runs any of it: when the line does not parse (a quote
left open, a `(` where a word belongs, an `if` with no `fi`), bash says so and runs nothing on
that line; so does `sh -c` (dash). Recovery bench, stack in `bash` style: a `sed -i` with its quote
left open answered `bash: -c: line 1: unexpected EOF while looking for matching`, was read as
an edit that may have written, and the re-run of the failing check was asked for.

Must never read as unrun: a command of several lines (those before the line the shell could not
parse ran: corpus, mini-swe-agent with gpt-5-mini printed `patched` before `bash: -c: line 31:
syntax error near unexpected token`); a command that starts a shell of its own (`bash -c`,
`sh x.sh`, `eval`, `source`, `xargs`), whose complaint may come after the rest ran.
"""

from __future__ import annotations

import re

__all__ = ["never_ran"]

_COMPLAINT = re.compile(
    r"^(?:/(?:usr/)?bin/)?(?:(?:ba)?sh: -c: line \d+: (?:syntax error|unexpected EOF while looking for matching)"
    r"|(?:da)?sh: \d+: Syntax error: )",
    re.MULTILINE,
)
"""bash's words (as `bash` or as `sh`) and dash's for a command they could not parse, at the start of a line."""
_STARTS_A_SHELL = re.compile(r"\b(?:ba|da|z|k)?sh\b|\beval\b|\bsource\b|\bxargs\b|(?:^|[;&|]\s*)\.\s")


def never_ran(command: str, output: str) -> bool:
    """`command`, one line, is one the shell could not parse (its output says so): none of it ran."""
    return "\n" not in command.strip() and not _STARTS_A_SHELL.search(command) and bool(_COMPLAINT.search(output))
