"""The corpus records' complaint marks (`bench/corpus/convert.py` writes `complaints`, the pool
indices of the agent's own format-error messages) and how the trajectory report counts
format-error loops from them (`complaint_runs` in `bench/trajectories.py`), not from the
proxy's own `complains()`."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from trajectories import complaint_runs, load_runs

from proxy.engine.text.nudges import complains

GRUMBLE = "Zorp. That reply was not what the harness wanted ({})."
"""A complaint in words no proxy rule was written for."""


def _write(folder: Path, record: dict[str, Any]) -> None:
    with gzip.open(folder / "synthetic.jsonl.gz", "wb") as handle:
        handle.write(orjson.dumps(record) + b"\n")


def _record(pool: list[dict[str, Any]], requests: list[list[int]], complaints: list[int] | None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "source": "synthetic",
        "part": "tune",
        "run": "run-1",
        "scaffold": "synthetic-agent",
        "model": "m",
        "protocol": "tools",
        "resolved": None,
        "tools": None,
        "pool": pool,
        "requests": [{"messages": messages, "reply": None} for messages in requests],
        "notes": "",
    }
    if complaints is not None:
        record["complaints"] = complaints
    return record


def _three_complaints(complaints: list[int] | None) -> dict[str, Any]:
    pool = [
        {"role": "system", "content": "You are an agent."},  # 0
        {"role": "user", "content": "Fix the bug."},  # 1
        {"role": "assistant", "content": "I think the fix is obvious."},  # 2: no call
        {"role": "user", "content": GRUMBLE.format(1)},  # 3
        {"role": "assistant", "content": "Still thinking."},  # 4
        {"role": "user", "content": GRUMBLE.format(2)},  # 5
        {"role": "assistant", "content": "Done, I believe."},  # 6
        {"role": "user", "content": GRUMBLE.format(3)},  # 7
    ]
    requests = [[0, 1], [0, 1, 2, 3], [0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5, 6, 7]]
    return _record(pool, requests, complaints)


def test_marked_complaints_in_words_the_proxy_does_not_know_make_a_loop_at_the_third(tmp_path: Path) -> None:
    assert not any(complains(GRUMBLE.format(k)) for k in (1, 2, 3))
    _write(tmp_path, _three_complaints([3, 5, 7]))
    (run,) = load_runs(tmp_path)
    assert run.marked and run.complaints == frozenset({3, 5, 7})
    assert complaint_runs(run) == 3


def test_a_record_without_marks_falls_back_to_the_proxys_own_recognition(tmp_path: Path) -> None:
    _write(tmp_path, _three_complaints(None))
    (run,) = load_runs(tmp_path)
    assert not run.marked and run.complaints == frozenset()
    assert complaint_runs(run) is None  # the proxy does not know these words: no loop seen


def test_two_marked_complaints_then_a_tool_result_are_no_loop(tmp_path: Path) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    pool = [
        {"role": "system", "content": "You are an agent."},  # 0
        {"role": "user", "content": "Fix the bug."},  # 1
        {"role": "assistant", "content": "Thinking."},  # 2: no call
        {"role": "user", "content": GRUMBLE.format(1)},  # 3
        {"role": "assistant", "content": "Thinking more."},  # 4: no call
        {"role": "user", "content": GRUMBLE.format(2)},  # 5
        {"role": "assistant", "content": None, "tool_calls": [call]},  # 6: a valid call
        {"role": "tool", "tool_call_id": "call_1", "content": "a.py\nb.py"},  # 7: its result
        {"role": "assistant", "content": "Now I know."},  # 8: no call
        {"role": "user", "content": GRUMBLE.format(3)},  # 9: a first complaint again, not a third
    ]
    requests = [[0, 1], [0, 1, 2, 3], [0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5, 6, 7], list(range(10))]
    _write(tmp_path, _record(pool, requests, [3, 5, 9]))
    (run,) = load_runs(tmp_path)
    assert complaint_runs(run) is None
