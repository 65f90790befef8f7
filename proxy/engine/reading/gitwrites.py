"""The files a `git` command writes in the work tree, where it names them.

Agents undo their own changes with git far more than with kept copies: `git checkout f.py`,
`git checkout -- f.py`, `git checkout HEAD -- f.py`, `git restore f.py` (corpus: some sixty such
calls, all read as changing nothing before). From HEAD or the index it puts back what the
repository had, a restore (the agent's change undone, no source edit, as `cp f.py.bak f.py` is);
from another revision (`git checkout v2.9.0 -- f.py`) it changes a tracked file, a source edit.

    checkout   paths after `--`, or operands that look like paths (a `/`, or a name with a dot);
               one that looks like neither is a branch, and a branch switch names no file
    restore    its path operands; `--staged` alone changes only the index (no file)

Not read: `git stash`, `git reset --hard`, `git clean` (which files they touch is not written in
the command; their kinds stay what the vocabulary says).
"""

from __future__ import annotations

__all__ = ["git_writes"]

_GLOBAL_WITH_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree"})
_BRANCHING = frozenset({"-b", "-B", "--orphan", "--detach"})
_FROM_REPOSITORY = frozenset({"HEAD", "@"})


def git_writes(words: list[str]) -> list[tuple[str, bool]]:
    """(path, whether it restores) for each work-tree file `git ...` (`words`) writes whole, when
    the command names them."""
    at = 1
    while at < len(words) and words[at].startswith("-"):
        at += 2 if words[at] in _GLOBAL_WITH_VALUE else 1
    if at >= len(words):
        return []
    sub, rest = words[at], words[at + 1 :]
    if sub == "checkout":
        return _checkout(rest)
    if sub == "restore":
        return _restore(rest)
    return []


def _path_like(word: str) -> bool:
    return "/" in word or "." in word.rsplit("/", 1)[-1]


def _checkout(args: list[str]) -> list[tuple[str, bool]]:
    if any(a in _BRANCHING for a in args):
        return []
    if "--" in args:
        split = args.index("--")
        revisions = [a for a in args[:split] if not a.startswith("-")]
        paths = args[split + 1 :]
    else:
        operands = [a for a in args if not a.startswith("-")]
        revisions = operands[:1] if operands and not _path_like(operands[0]) else []
        paths = [a for a in operands[len(revisions) :] if _path_like(a)]
    restores = all(r in _FROM_REPOSITORY for r in revisions)
    return [(p, restores) for p in paths if p not in (".", "./")]


def _restore(args: list[str]) -> list[tuple[str, bool]]:
    staged = "--staged" in args or "-S" in args
    if staged and "--worktree" not in args and "-W" not in args:
        return []
    source, paths, at = "HEAD", [], 0
    while at < len(args):
        word = args[at]
        if word in ("-s", "--source") and at + 1 < len(args):
            source, at = args[at + 1], at + 2
            continue
        if word.startswith("--source="):
            source = word.split("=", 1)[1]
        elif not word.startswith("-") and word not in (".", "./"):
            paths.append(word)
        at += 1
    return [(p, source in _FROM_REPOSITORY) for p in paths]
