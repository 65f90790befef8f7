"""The agent's workspace as far as its calls show it: which files it created, which it found.

Not every write changes the sources the failing check runs. Agents write files of their own
all the time (a script that reproduces the bug, a test to verify a fix, a backup copy) and
remove them again; none of that is a fix. So a write is a *source edit* only when it changes
a file the agent did not create:

    in place (`sed -i`, an editor's `str_replace`)      a source edit, unless the file is the agent's
    whole (a redirect, `cp`, an editor's `create`)      a source edit when the file was seen before
                                                         (read, searched, edited); otherwise the agent
                                                         creates it: its own file from then on
    a temporary path (`/tmp/...`)                        never a source edit, unless the agent read
                                                         it before (a project checked out in a
                                                         temporary directory: its files are read first)
    a kept copy put back (`cp f.py.bak f.py`)           never a source edit: it undoes changes
    an edit whose file cannot be told (`git apply`)      a source edit

Paths are compared the way agents mix them (`/testbed/pkg/mod.py` is `pkg/mod.py`): equal, or
one ends with the other after a `/`. The sets are bounded (the most recent kept).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from proxy.engine.reading.commands import Write

__all__ = ["Workspace", "among", "same_file"]

_KEPT = 64
_TEMPORARY = ("/tmp/", "/var/tmp/", "/private/tmp/", "/dev/shm/")


def _normal(path: str) -> str:
    path = path.strip().strip("'\"")
    while path.startswith("./"):
        path = path[2:]
    return path.replace("//", "/").rstrip("/")


def same_file(a: str, b: str) -> bool:
    """The two paths name the same file, as far as can be told (equal, or one is a suffix of
    the other after a `/`)."""
    a, b = _normal(a), _normal(b)
    return bool(a and b) and (a == b or a.endswith("/" + b) or b.endswith("/" + a))


def among(path: str, paths: Iterable[str]) -> bool:
    """`path` names the same file as one of `paths` (`same_file`)."""
    return any(same_file(path, p) for p in paths)


def _added(paths: tuple[str, ...], new: Iterable[str]) -> tuple[str, ...]:
    fresh = [p for p in dict.fromkeys(_normal(n) for n in new) if p and not among(p, paths)]
    return (*paths, *fresh)[-_KEPT:] if fresh else paths


@dataclass(frozen=True, slots=True)
class Workspace:
    created: tuple[str, ...] = ()
    """Files the agent created in this run (its own: scripts, tests, copies)."""
    known: tuple[str, ...] = ()
    """Files seen to exist before the agent wrote them: read, searched in, edited in place."""

    def is_own(self, path: str) -> bool:
        """A file of the agent's own: one it created, or a temporary one it had not read."""
        normal = _normal(path)
        if among(normal, self.created):
            return True
        return normal.startswith(_TEMPORARY) and not among(normal, self.known)

    def edits_source(self, writes: tuple[Write, ...]) -> bool:
        """Some write changes a file that is not the agent's own (see the module's docstring);
        an edit with no write that can be told is one too."""
        if not writes:
            return True
        for write in writes:
            if self.is_own(write.path) or write.restores:
                continue
            if not write.whole or among(write.path, self.known):
                return True
        return False

    def after(self, writes: tuple[Write, ...], seen: Iterable[str] = ()) -> Workspace:
        """The workspace once `writes` are done and the files `seen` were read."""
        created = _added(
            self.created,
            (w.path for w in writes if w.whole and not self.is_own(w.path) and not among(w.path, self.known)),
        )
        in_place = (w.path for w in writes if not w.whole and not self.is_own(w.path))
        known = _added(self.known, [*seen, *in_place])
        if created is self.created and known is self.known:
            return self
        return Workspace(created, known)
