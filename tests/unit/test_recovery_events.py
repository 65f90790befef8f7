"""The recovery bench's per-run record of what the proxy warned about (`bench/recovery.py`):
the warnings logged while one run went, counted by event, read from where the last run's ended."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from recovery import events


def test_each_run_counts_only_the_warnings_logged_while_it_went(tmp_path: Path) -> None:
    log = tmp_path / "full.log"
    log.write_bytes(b'{"event": "repair_call_unreadable", "level": "warning"}\n')
    first, offset = events(log, 0)
    with log.open("ab") as f:
        f.write(b'{"event": "repair_schema_refused"}\nnot json\n{"event": "repair_schema_refused"}\n')
    second, end = events(log, offset)
    assert first == {"repair_call_unreadable": 1}
    assert second == {"repair_schema_refused": 2} and end == log.stat().st_size


def test_an_arm_with_no_proxy_has_no_warnings(tmp_path: Path) -> None:
    assert events(tmp_path / "direct.log", 0) == ({}, 0)
