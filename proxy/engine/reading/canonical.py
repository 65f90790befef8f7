"""Normalise before comparing: calls as canonical JSON with sorted keys and volatile ids
dropped, outputs as short digests of what they say: the agent's framing taken off
(`outputs.envelope.payload`) and run-to-run noise (pids, timings, addresses, temporary paths)
replaced as in a failure's signature (`outputs.normalise`), so a poll whose only change is a timing
repeats, and one that makes progress does not. A result that says nothing (empty, or only
the agent's fixed "no output" framing) has no digest."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson
import xxhash

from proxy.engine.outputs.envelope import payload
from proxy.engine.outputs.normalise import normalise
from proxy.engine.outputs.outcome import exit_code
from proxy.engine.text.transcript import ToolCall

__all__ = ["call_identity", "call_key", "output_digest"]


def _drop(value: Any, volatile: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: _drop(v, volatile) for k, v in value.items() if k not in volatile}
    if isinstance(value, list):
        return [_drop(v, volatile) for v in value]
    return value


def call_key(name: str, arguments: Mapping[str, Any] | None, raw: str, volatile: frozenset[str]) -> str:
    """`name` plus its arguments as sorted-key JSON, volatile keys dropped at any depth.

    Malformed arguments fall back to the raw text with whitespace collapsed, so reordered
    keys never evade a comparison and odd payloads never raise.
    """
    if arguments is None:
        return f"{name}\x00{' '.join(raw.split())}"
    try:
        encoded = orjson.dumps(_drop(dict(arguments), volatile), option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        encoded = " ".join(raw.split())
    return f"{name}\x00{encoded}"


def output_digest(text: str) -> str | None:
    """A digest of what a result says (see the module's docstring); None when it says nothing."""
    said = payload(text)
    if not said:
        return None
    code = exit_code(text)
    normal = normalise(said) + (f"\n[exit {code}]" if code is not None else "")
    return hashlib.blake2b(normal.encode("utf-8", "replace"), digest_size=16).hexdigest()


def call_identity(call: ToolCall) -> str:
    """One call in one history: its id and a digest of what it was and what it returned. Two
    runs that reuse an id (a server numbering them from 0) differ in the rest."""
    hasher = xxhash.xxh3_64()
    for part in (call.name, call.raw_arguments, call.result or ""):
        hasher.update(part.encode("utf-8", "replace"))
        hasher.update(b"\x00")
    return f"{call.id}:{hasher.hexdigest()}"
