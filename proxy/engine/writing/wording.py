"""What every remedy shares: the marker, the token budget, paths written the agent's way, and
the failing call quoted as it was made. (The two texts that belong to no one pattern, the
incomplete hand-back and the cross-run memory note, are `plan.handback`'s.)

Each pattern's own instruction lives in its detector file; each names what is failing and
the concrete next step, and fits the policy's token budget: when it does not, the quoted
evidence is shortened, never the instruction.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from proxy.engine.state.failure import RepairState
from proxy.engine.text.messages import parse_arguments
from proxy.engine.text.tokens import TokenCounter
from proxy.engine.writing.expected import Expectation, Kind, documented, expectation
from proxy.engine.writing.vocabulary import Call, Vocabulary

__all__ = [
    "BEHAVIOUR",
    "PREFIX",
    "expected_behaviour",
    "failing_call",
    "fitter",
    "lines_to_pick",
    "one_of_them",
    "resolve_path",
    "working_dir",
]

PREFIX = "[repair-proxy]"
"""Marks every text the proxy adds, so a reader of the transcript can tell it apart."""
BEHAVIOUR = "so that the code does what is expected, for every input and not only the test's"
"""What an edit remedy asks the change for, on a live failure: the behaviour, never the check's
green. Asked for a line "changed so that the failing check passes", Qwen2.5-Coder-1.5B made the
test's one case come out right and left the code wrong (`count = 0` -> `count = 1`, `score =
int(score)` -> `score = int(score) + 1`: every solve of the project's held-out tasks with the
defaults, issue 61)."""

_CD = re.compile(r"^\s*cd\s+([^\s;&|]+)")


def fitter(counter: TokenCounter, budget: int) -> Callable[[str, str, str], str]:
    """(head, quote, tail) -> the text within `budget` tokens, the quote shortened first."""

    def fit(head: str, snippet: str, tail: str) -> str:
        text = f"{head}\n{snippet}\n{tail}" if snippet else f"{head}\n{tail}"
        if counter.count(text) <= budget:
            return text
        spare = budget - counter.count(f"{head}\n\n{tail}")
        while spare >= 8:  # tokens at the seams can merge: trimmed once more when the whole is one over
            text = f"{head}\n{counter.trim(snippet, spare)}\n{tail}"
            if counter.count(text) <= budget:
                return text
            spare -= 2
        # no room for the quote: the head is shortened next, and the instruction (the tail) kept whole
        room = budget - counter.count(f"\n{tail}")
        while room >= 8:
            text = f"{counter.trim(head, room)}\n{tail}"
            if counter.count(text) <= budget:
                return text
            room -= 2
        return counter.trim(f"{PREFIX} {tail}", budget)

    return fit


def resolve_path(path: str, known: Iterable[str], cwd: str) -> str:
    """A path from the evidence, written the way the agent writes paths.

    Runners print paths relative to where they ran; agents often use absolute ones. Use a
    known path that ends with it, else the check's working directory, else a root under
    which the agent's other paths share the first directory.
    """
    if path.startswith("/"):
        return path
    known = [k for k in known if k]
    for candidate in known:
        if candidate == path or candidate.endswith("/" + path):
            return candidate
    if cwd:
        return f"{cwd.rstrip('/')}/{path}"
    first = path.split("/", 1)[0]
    for candidate in known:
        marker = f"/{first}/"
        if candidate.startswith("/") and marker in candidate:
            return candidate[: candidate.index(marker)] + "/" + path
    return path


def working_dir(command: str) -> str:
    """The directory a shell command `cd`s into first, if it does."""
    match = _CD.match(command)
    return match.group(1) if match else ""


def failing_call(state: RepairState, vocabulary: Vocabulary | None = None) -> str:
    """The call that failed, exactly as the agent made it."""
    arguments, _raw = parse_arguments(state.failing_arguments)
    if vocabulary is not None and state.failing_tool in vocabulary.tools and arguments is not None:
        return Call(state.failing_tool, arguments).render()
    if state.failing_command:
        return f"`{state.failing_command}`"
    return f"{state.failing_tool} with {state.failing_arguments}"


def lines_to_pick(path: str, lines: Iterable[str], which: str = "the failure points at") -> str:
    """The lines a held edit changes one of (`Vocabulary.change_one`), quoted before its call."""
    quoted = "\n".join(lines)
    return f"The lines of {path} {which}, exactly as the file has them now:\n{quoted}\nChange one of them:"


def one_of_them(vocabulary: Vocabulary, goal: str = BEHAVIOUR) -> str:
    """What the model writes in a held edit that changes one line (`Vocabulary.change_one`)."""
    return f"with {vocabulary.old_arg} one of those lines, whole, and {vocabulary.new_arg} that line changed {goal}"


def said(found: Expectation) -> str:
    """What the failing test expects and what the code does instead, in a sentence."""
    what = f"`{found.expression}`" if found.expression else None
    if found.kind is Kind.RAISE:
        return f"The failing test expects {found.expected} to be raised; nothing is."
    if found.kind is Kind.HOLD:
        return f"The failing test expects `{found.expected}` to hold; it does not (`{found.actual}`)."
    if found.kind is Kind.TRUTH:
        subject = what or "the value it checks"
        return f"The failing test expects {subject} to be {found.expected}; it is `{found.actual}`."
    if what is not None:
        return f"The failing test expects {what} to be `{found.expected}`; it is `{found.actual}`."
    return f"The failing test expects `{found.expected}`; the code gives `{found.actual}`."


def expected_behaviour(state: RepairState, lines: str | None = None) -> str:
    """What the live failure shows is expected and what the code does instead (`expectation`: the
    failing output's own comparison, told apart by the test's line where the agent read it), and
    what the code's own docstrings in `lines` say it does; "" when neither is known."""
    if not state.live:
        return ""
    test = state.pointers.test_file
    found = expectation(state.snippet, state.shown(test) if test else None)
    parts = [said(found)] if found is not None else []
    parts += [f"`{name}` is documented as: {doc}" for name, doc in documented(lines, state.called)[:2]]
    return " ".join(parts)
