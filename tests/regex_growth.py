"""The inputs that would make a backtracking matcher slow on a pattern, and how its time grows
with them (the patterns themselves: `regex_found`).

Each pattern is fed inputs built from its own pieces (`re._parser`), each as `opener + unit * k +
closer`: long runs of every character its classes and literals name (a few of each kind), of every
literal run, of a sample of every branch, repeat and group, of every two or three neighbouring
pieces, and of every head of the pattern (with and without one character of what follows it); each
alone, after the pattern's first literal run (what it waits after), before its last one or a line
break (what it waits for); and every repeat pumped inside a sample of the whole pattern, with and
without what comes after it.

`growth` times one input at two sizes in the same run (the best of a few runs each, in turns, in
this thread's CPU time) and gives the time's growth over the input's: about 1 for a linear
matcher, 16 for a quadratic one at 16x the size. A run is cut short by a timer when it runs away;
its time is then infinite, and a smaller size is measured so that the verdict stays a ratio.
"""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Iterator
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any

POOL = "a7 \n\tZ_.-=:/\\\"'<>()[]{}@#$%!,;*+?|^~`&\x1b\x07\r0xé"
"""Characters tried against each class of a pattern: a few of each kind."""
SIZES = (1_000, 16_000)
"""Input lengths timed: 16x apart, so that a quadratic shows as about 16 times the input's growth
(a linear one as about 1)."""
CAP_SECONDS = 2.0
"""A single run longer than this is stopped: it ran away (its time is then infinite)."""
REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
ONE_CHARACTER = (sre.NOT_LITERAL, sre.IN, sre.ANY, sre.LITERAL)
ZERO_WIDTH = (sre.AT, sre.ASSERT, sre.ASSERT_NOT)


# -- their pieces -------------------------------------------------------------------------------


def _one(node: Any, state: Any) -> Any:
    return re._compiler.compile(_parser.SubPattern(state, [node]), state.flags)  # type: ignore[attr-defined]


def _parts(node: Any) -> list[Any]:
    """The sequences a node holds (a branch's branches, a repeat's or a group's body...)."""
    op, av = node
    if op in REPEATS:
        return [av[2]]
    if op is sre.BRANCH:
        return list(av[1])
    if op is sre.SUBPATTERN:
        return [av[3]]
    if op is sre.ATOMIC_GROUP:
        return [av]
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        return [av[1]]
    if op is sre.GROUPREF_EXISTS:
        return [part for part in av[1:] if part is not None]
    return []


def _holds(data: Any, target: Any) -> bool:
    """`target` is a node somewhere inside `data`."""
    return target is not None and any(n is target or any(_holds(p, target) for p in _parts(n)) for n in data)


class _Pieces:
    """The pieces of one pattern: the characters its classes and literals name, its literal runs,
    samples of its parts, and its repeats (to pump)."""

    def __init__(self, pattern: re.Pattern[Any]) -> None:
        self.parsed = _parser.parse(pattern.pattern, pattern.flags)
        self.state = _parser.State()
        self.state.flags = self.parsed.state.flags
        self.chars: dict[str, None] = {}
        self.units: dict[str, None] = {}
        self.literals: list[str] = []
        self.repeats: list[Any] = []

    def members(self, node: Any) -> list[str]:
        """Characters a one-character node matches: its own literals, then the first of each kind in
        the pool (a letter, a digit, a blank, a line break, punctuation), at most eight."""
        own = [chr(av) for op, av in (node[1] if node[0] is sre.IN else [node]) if op is sre.LITERAL]
        single = _one(node, self.state)
        kinds: dict[str, str] = {}
        for char in [*own, *POOL]:
            kind = "a" if char.isalpha() else "7" if char.isdigit() else " " if char in " \t" else char
            if kind not in kinds and single.fullmatch(char):
                kinds[kind] = char
        return list(kinds.values())[:8]

    def first_chars(self, data: Any) -> list[str]:
        """Characters the first node of `data` that reads one may be (zero-width nodes skipped)."""
        for node in data:
            op, av = node
            if op in ONE_CHARACTER:
                return self.members(node)
            if op in REPEATS and len(av[2]) == 1 and av[2][0][0] in ONE_CHARACTER:
                return self.members(av[2][0])
            if op not in ZERO_WIDTH:
                return []
        return []

    def sample(self, data: Any, target: Any = None) -> str:
        """A short string each node of `data` may match, in turn, with NUL where `target` (a node)
        stands (lookarounds give nothing but a positive lookbehind, whose text comes first)."""
        out = []
        for node in data:
            op, av = node
            if node is target:
                out.append("\0")
            elif op is sre.LITERAL:
                out.append(chr(av))
            elif op in ONE_CHARACTER:
                out.append(next(iter(self.members(node)), ""))
            elif op is sre.BRANCH:
                out.append(self.sample(next((b for b in av[1] if _holds(b, target)), av[1][0]), target))
            elif op in REPEATS:
                once = self.sample(av[2], target)
                out.append(once + self.sample(av[2]) * (min(max(av[0], 1), 16) - 1))
            elif op in (sre.SUBPATTERN, sre.ATOMIC_GROUP, sre.GROUPREF_EXISTS) or (op is sre.ASSERT and av[0] < 0):
                out.append(self.sample(_parts(node)[0], target))
        return "".join(out)

    def visit(self, data: Any, top: bool = False) -> None:
        """Gather the pieces of a sequence and of everything inside it."""
        self.units[self.sample(data)] = None
        run = ""
        for i, node in enumerate(data):
            if top:  # the pattern's head, without what it waits for; and with one character of what follows
                head = self.sample(data[: i + 1])
                self.units.update(dict.fromkeys([head, *(head + c for c in self.first_chars(data[i + 1 :]))]))
            if node[0] is sre.LITERAL:
                run += chr(node[1])
                self.chars[chr(node[1])] = None
                continue
            if len(run) > 1:
                self.literals.append(run)
            run = ""
            self.units.update(dict.fromkeys(self.sample(data[i : i + w]) for w in (2, 3) if i + w <= len(data)))
            if node[0] in ONE_CHARACTER:
                self.chars.update(dict.fromkeys(self.members(node)))
            if node[0] in REPEATS and node[1][1] > 1:
                self.repeats.append(node)
            for part in _parts(node):
                self.visit(part)
        if len(run) > 1:
            self.literals.append(run)

    def pumped(self) -> Iterator[tuple[str, str, str]]:
        """Each repeat pumped inside a sample of the whole pattern: (what comes before it, a unit of
        its body, what comes after it or nothing or a line break)."""
        for node in self.repeats:
            head, _, tail = self.sample(self.parsed.data, node).partition("\0")
            body = node[1][2]
            units = dict.fromkeys([self.sample(body), *self.first_chars(body)])
            for unit in filter(None, units):
                for closer in dict.fromkeys([tail, "", "\n"]):
                    yield head, unit, closer


def hostile_inputs(pattern: re.Pattern[Any]) -> list[tuple[str, str, str]]:
    """(opener, unit, closer): the input is `opener + unit * k + closer`."""
    pieces = _Pieces(pattern)
    pieces.visit(pieces.parsed.data, top=True)
    units = [u for u in {**pieces.chars, **dict.fromkeys(pieces.literals), **pieces.units} if u]
    openers = ["", pieces.literals[0]] if pieces.literals else [""]
    closers = dict.fromkeys(["", "\n", pieces.literals[-1] if pieces.literals else ""])
    found = {(opener, unit, closer): None for unit in units for opener in openers for closer in closers}
    found.update(dict.fromkeys(pieces.pumped()))
    return list(found)


# -- timing -------------------------------------------------------------------------------------


class _RanAway(Exception):
    pass


def _alarm(_signum: int, _frame: Any) -> None:
    raise _RanAway


def _run_once(pattern: re.Pattern[Any], text: Any) -> float:
    """CPU seconds one scan of `text` for every match takes (this thread's: other work on the
    machine is not counted); infinity when it ran past the cap (the matcher checks for signals)."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CAP_SECONDS)
    started = time.thread_time()
    try:
        for _ in pattern.finditer(text):
            pass
        return time.thread_time() - started
    except _RanAway:
        return float("inf")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def build(pattern: re.Pattern[Any], piece: tuple[str, str, str], size: int) -> Any:
    opener, unit, closer = piece
    text = opener + unit * max(1, size // len(unit)) + closer
    return text.encode("latin-1", "ignore") if isinstance(pattern.pattern, bytes) else text


def _best_pair(pattern: re.Pattern[Any], small: Any, large: Any, repeats: int) -> tuple[float, float]:
    """The best time of each, measured in turns (a burst of other work hits both alike); the
    larger is not run once the smaller has run away."""
    t_small = t_large = float("inf")
    for _ in range(repeats):
        t_small = min(t_small, _run_once(pattern, small))
        if t_small == float("inf"):
            break
        t_large = min(t_large, _run_once(pattern, large))
    return t_small, t_large


def growth(pattern: re.Pattern[Any], piece: tuple[str, str, str], repeats: int = 1) -> float:
    """The time's growth over the input's between the two sizes (1: linear, 16: quadratic); when
    the smaller size ran away, it against a size sixteen times smaller again."""
    small, large = (build(pattern, piece, size) for size in SIZES)
    t_small, t_large = _best_pair(pattern, small, large, repeats)
    if t_small == float("inf"):
        small, large = build(pattern, piece, SIZES[0] // 16), small
        t_small, t_large = _best_pair(pattern, small, large, repeats)
    if t_small == float("inf"):
        return float("inf")
    return (t_large / max(t_small, 1e-6)) / (len(large) / len(small))
