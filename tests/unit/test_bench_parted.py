"""`bench/parted.py`: where two arms' runs of a seed part, and whether the proxy or the sampler
parted them. A table: two taps, the exchange they part at, and by what."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from parted import parting


def _x(tail: str, reply: str, path: str = "bench-runs/tmpab12/quota-openhands-stuck-1") -> dict[str, Any]:
    return {"request": {"tail": [{"role": "tool", "content": f"{path}/quota.py: {tail}"}]}, "reply": {"content": reply}}


SAME = [_x("2 failed in 0.11s", "view"), _x("1 failed", "edit")]

CASES = [
    # (the other arm's tap, parted at, by)
    (SAME, 2, "same"),
    (SAME[:1], 1, "proxy"),  # equal until one ended: the other's proxy asked again
    ([_x("2 failed in 0.14s", "view", "bench-runs/tmpzz99/quota-openhands-stuck-1-8812"), SAME[1]], 2, "same"),
    ([SAME[0], _x("1 failed", "run the tests")], 1, "sampler"),
    ([_x("2 failed in 0.11s", "edit"), SAME[1]], 0, "sampler"),
    ([SAME[0], _x("refused: made before", "edit")], 1, "proxy"),
    ([_x("3 failed in 0.11s", "edit")], 0, "proxy"),
]


@pytest.mark.parametrize(("other", "at", "by"), CASES)
def test_where_and_by_what_two_runs_part(other: list[dict[str, Any]], at: int, by: str) -> None:
    assert parting(SAME, other) == (at, by)
