"""A request's history against the history the state was folded from: where to resume reading,
or a branch of its own.

An agent's next request repeats its last one and adds to it, so the state's cursor (how many
messages it has read, and a digest of the last few of them) is found again at the same place:
reading resumes there. When it is not:

    compacted   the agent dropped or summarised older messages, and the newest result the
                state folded is still there (a call is known by its id *and* its content), or
                none of its calls was folded before and none reuses a folded call's id (all of
                it is new): reading resumes after what was folded, and the state keeps what the
                transcript no longer shows
    departed    it shares only older results with the state, or reuses a folded call's id for
                another call (another run of the same task, a server that numbers call ids from
                0, a history rewritten): the request is another branch, folded from its start into
                a state of its own, never the old one's

The digest covers the last `SUFFIX_MESSAGES` messages, not one: two runs whose newest message
is the same (the same failing test, under an id the server reuses) differ in the turns before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from typing import Any

import orjson

from proxy.engine.reading.canonical import call_identity
from proxy.engine.state.conversation import ConversationState, Cursor
from proxy.engine.state.failure import RepairState
from proxy.engine.state.patterns import Trip
from proxy.engine.text.transcript import Turn, read_turns

__all__ = [
    "FIRST_FOLD_MESSAGES",
    "SUFFIX_MESSAGES",
    "Caught",
    "Resume",
    "cursor_after",
    "cursor_at",
    "numbered",
    "resume",
    "unnumbered",
]

SUFFIX_MESSAGES = 8
FIRST_FOLD_MESSAGES = 500
"""A transcript seen for the first time (no cached state) is folded from at most this many of
its last messages: the current failure and the loops are in the recent turns, and a replica
that lost its cache must not stall on a 50,000-message history."""


@dataclass(frozen=True, slots=True)
class Resume:
    """Where reading a request starts, and what in it was folded already."""

    start: int
    fresh: bool = False
    """The request departs from the state's history: fold it into a state of its own."""
    reread_before: int = 0
    """Turns opened before this index are read again: their calls folded already are skipped."""


def numbered(before: Sequence[str], identities: Sequence[str]) -> list[str]:
    """Each call identity with how many times the same one came before it (`before` first): a
    server that reuses ids makes the same command with the same output the same identity, and
    its third run is still not its first. (`before` is every call folded so far, up to
    `FOLDED_IDS`, read on every request: it is searched, at C speed, for the identities asked
    about only, a turn's one or few, not counted whole.)"""
    counts: dict[str, int] = {}
    out = []
    for identity in identities:
        if identity not in counts:
            counts[identity] = _occurrences(before, identity)
        out.append(f"{identity}#{counts[identity]}")
        counts[identity] += 1
    return out


def _occurrences(keys: Sequence[str], identity: str) -> int:
    """How many of `keys` number `identity` (its part before the last `#`, as `unnumbered` reads it)."""
    if not identity:
        return sum(1 for key in keys if not key.rpartition("#")[0])
    prefix = identity + "#"
    candidates = compress(keys, map(str.startswith, keys, repeat(prefix)))
    return sum(1 for key in candidates if "#" not in key[len(prefix) :])


def unnumbered(keys: Sequence[str]) -> frozenset[str]:
    """The identities of `keys`, their occurrence numbers left off."""
    return frozenset(key.rpartition("#")[0] for key in keys)


def _suffix(messages: Sequence[Any], count: int) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for message in messages[max(0, count - SUFFIX_MESSAGES) : count]:
        try:
            digest.update(orjson.dumps(message, option=orjson.OPT_SORT_KEYS))
        except TypeError:
            digest.update(repr(message).encode())
    return digest.hexdigest()


def cursor_after(turns: list[Turn], messages: Sequence[Any]) -> Cursor | None:
    """Read up to the end, except an unanswered last turn, which is read again next time."""
    end = len(messages)
    if turns and any(c.result is None for c in turns[-1].calls):
        end = turns[-1].message_index
    return Cursor(end, _suffix(messages, end), len(messages)) if end > 0 else None


def cursor_at(messages: Sequence[Any], index: int, reread_before: int) -> Cursor:
    """Read up to `index` (a fold stopped there): the next request reads on from it."""
    return Cursor(index, _suffix(messages, index), max(index, reread_before))


def first_fold_start(messages: Sequence[Any]) -> int:
    """Where a first-seen transcript is read from: the start, or, past `FIRST_FOLD_MESSAGES`, the
    assistant message that opens a turn near the end (what a replica with no state can afford)."""
    if len(messages) <= FIRST_FOLD_MESSAGES:
        return 0
    start = len(messages) - FIRST_FOLD_MESSAGES
    return next(
        (
            i
            for i in range(start, len(messages))
            if isinstance(messages[i], dict) and messages[i].get("role") == "assistant"
        ),
        start,
    )


def resume(state: ConversationState, messages: Sequence[Any]) -> Resume:
    """Where to read `messages` from, given what `state` has folded (see the module's docstring)."""
    cursor = state.cursor
    if cursor is not None and 0 < cursor.count <= len(messages) and _suffix(messages, cursor.count) == cursor.digest:
        return Resume(cursor.count, reread_before=cursor.seen)
    if not state.folded:
        return Resume(first_fold_start(messages), fresh=cursor is not None)
    folded = set(state.folded)
    turns, _users = read_turns(messages, first_fold_start(messages))
    answered = [(turn, c) for turn in turns for c in turn.calls if c.result is not None]
    keys = numbered((), [call_identity(c) for _turn, c in answered])
    matched = [(turn, key) for (turn, _c), key in zip(answered, keys, strict=True) if key in folded]
    if matched and matched[-1][1] == state.folded[-1]:
        turn = matched[-1][0]
        return Resume(turn.message_index, reread_before=turn.end_index + 1)
    ids = {key.rpartition("#")[0].rpartition(":")[0] for key in state.folded}
    if matched or any(c.id in ids for _turn, c in answered):
        return Resume(first_fold_start(messages), fresh=True)
    return Resume(first_fold_start(messages))


@dataclass(frozen=True, slots=True)
class Caught:
    """A request's unseen turns folded into a conversation's state.

    An agent sends one request per turn, so a proxy that has seen every request folds one new
    turn each time. One that has not (another worker or replica served the earlier requests,
    or this one restarted) folds several at once and must decide as the others did: each
    trip's remedy is written from the failure model as it stood on the trip's own turn, and
    what the earlier turns did (their trips, outcomes, a pass) was reported by the request
    that followed each of them. Only the latest turn's are this request's news.
    """

    state: ConversationState
    trips: tuple[tuple[Trip, RepairState], ...]
    """Every trip on the folded turns, with the failure model right after its turn."""
    before_latest: ConversationState
    """The state before the latest folded turn (the starting state when there is none)."""
    latest_trips: tuple[Trip, ...] = ()
    """The trips of the latest folded turn and of the user messages after it: the ones this
    request reports."""
