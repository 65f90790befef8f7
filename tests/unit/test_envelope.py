"""JSON envelopes around tool output are read as the output they carry, for any agent."""

from __future__ import annotations

import orjson
import pytest

from proxy.engine.outputs.envelope import unwrap


@pytest.mark.parametrize(
    ("envelope", "expected"),
    [
        ({"returncode": 1, "output": "FAILED t.py::x\n1 failed"}, "FAILED t.py::x\n1 failed\n[exit code: 1]"),
        ({"exit_code": 0, "stdout": "ok", "stderr": "warn"}, "ok\nwarn\n[exit code: 0]"),
        ({"output": "just text"}, "just text"),
        ({"returncode": 2, "output": ""}, "\n[exit code: 2]"),
    ],
)
def test_an_envelope_is_its_output_with_the_exit_code_stated(envelope: dict[str, object], expected: str) -> None:
    assert unwrap(orjson.dumps(envelope).decode()) == expected


@pytest.mark.parametrize(
    "text",
    ['{"name": "x", "arguments": {}}', "not json {", '[{"returncode": 1}]', "plain output", '{"returncode": true}'],
)
def test_anything_else_comes_back_unchanged(text: str) -> None:
    assert unwrap(text) == text
