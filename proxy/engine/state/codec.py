"""A conversation state as bytes, and back: for the states the cache keeps packed (out of the
garbage collector's sight, see `cache`) and the ones workers share (`store.shared_states`).

Pickle, with every dataclass written as its constructor's arguments (read in C by an
`attrgetter`): a state is mostly small frozen dataclasses and plain tuples (its timeline), and
pickle's default for the dataclasses (a dict of slots per object) takes about half as long again
to write and twice as long to read. A 24-turn state packs to about 6 KB in 29 us and unpacks in
31 us; a 100-turn state to 16 KB, 46 and 50 us (timeline rows as objects, before: 56 / 43 and
131 / 98 us). A class with a `__reduce__` of its own pickles as it says (a trip's pattern, a
registered detector, as its name). Only bytes this process or its sibling workers packed are
ever unpacked, and only when they begin with this code's mark (`MARK`): a state another version
packed (a worker not yet upgraded, a row in the shared file from before a deploy) may unpickle
without an error and still be wrong for this code (a trip's pattern a name where the code now
reads an object), so it is not read at all, and the conversation is folded again.
"""

from __future__ import annotations

import dataclasses
import io
import operator
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import xxhash

from proxy.engine.state.conversation import ConversationState

__all__ = ["MARK", "pack", "unpack"]


def _mark() -> bytes:
    """8 bytes that change with the engine's code: every state and its detectors' states live there."""
    engine = Path(__file__).resolve().parents[1]
    digest = xxhash.xxh3_64()
    for source in sorted(engine.rglob("*.py")):
        digest.update(source.relative_to(engine).as_posix().encode())
        digest.update(source.read_bytes())
    return digest.digest()


MARK = _mark()
"""The mark a packed state begins with: the engine's sources, digested once (about 6 ms)."""

Arguments = Callable[[Any], tuple[Any, ...]]
_ARGUMENTS: dict[type, Arguments | None] = {}
"""Each class met: what reads an instance's constructor arguments (its dataclass fields, in
order), or None (pickled as pickle does)."""


def _arguments(kind: type) -> Arguments | None:
    if not dataclasses.is_dataclass(kind) or not all(f.init for f in dataclasses.fields(kind)):
        return None
    if "__reduce__" in vars(kind):  # it says how it pickles (a trip's pattern: by its name)
        return None
    names = [f.name for f in dataclasses.fields(kind)]
    if len(names) > 1:
        return operator.attrgetter(*names)  # a tuple, read in C
    return lambda obj: tuple(getattr(obj, name) for name in names)


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        kind = type(obj)
        if kind not in _ARGUMENTS:
            _ARGUMENTS[kind] = None if isinstance(obj, type) else _arguments(kind)
        arguments = _ARGUMENTS[kind]
        if arguments is None:
            return NotImplemented
        return kind, arguments(obj)


def pack(state: ConversationState) -> bytes:
    out = io.BytesIO()
    out.write(MARK)
    _Pickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(state)
    return out.getvalue()


def unpack(data: bytes) -> ConversationState:
    """The state `pack` wrote; `ValueError` for bytes that are not one, or that other code packed."""
    if data[: len(MARK)] != MARK:
        raise ValueError("not a state this code packed")
    try:
        state = pickle.loads(memoryview(data)[len(MARK) :])
    except Exception as exc:
        raise ValueError(f"not a packed state: {exc}") from exc
    if not isinstance(state, ConversationState):
        raise ValueError(f"not a packed state: a {type(state).__name__}")
    return state
