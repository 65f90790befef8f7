"""What the agent's reads showed of its files, as they are now (`state.seen`): a write forgets the
file it names however the path was written, and only that file."""

from __future__ import annotations

from typing import Any

import orjson
from chat import Chat
from scenario_loader import analyse, engine

SHELL = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    }
]
CODE = 'def is_leap(year):\n    """True for Gregorian leap years."""\n    return (year % 4) == 0\n'


def _sh(command: str, output: str = "") -> tuple[str, dict[str, Any], str]:
    return ("bash", {"command": command}, orjson.dumps({"returncode": 0, "output": output}).decode())


def _seen_after(*calls: tuple[str, dict[str, Any], str]) -> dict[str, str]:
    chat = Chat(user="The tests in /work/leap fail. Fix them.", tools=SHELL)
    for call in calls:
        chat.turn(call)
    planned = analyse(engine(), chat.bytes())
    assert planned is not None
    return dict(planned.decision.state.repair.seen)


def test_a_write_by_a_relative_path_forgets_the_file_read_by_its_absolute_path() -> None:
    """Recovery bench, leap: after `sed -i ... leap.py` the directive went on quoting the lines the
    sed had replaced as "the code as you last saw it", and the model made the same sed again."""
    seen = _seen_after(_sh("cat /work/leap/leap.py", CODE), _sh("sed -i 's/% 4) == 0/% 4) % 4 == 0/' leap.py"))
    assert "/work/leap/leap.py" not in seen


def test_a_write_of_another_file_of_the_same_name_keeps_what_was_read() -> None:
    seen = _seen_after(_sh("cat /work/leap/leap.py", CODE), _sh("sed -i 's/% 4) == 0/% 4) % 4 == 0/' tests/leap.py"))
    assert list(seen) == ["/work/leap/leap.py"] and CODE in seen["/work/leap/leap.py"]


def test_a_file_read_again_by_another_path_is_kept_once_as_last_read() -> None:
    seen = _seen_after(_sh("cat /work/leap/leap.py", CODE), _sh("cat leap.py", CODE.upper()))
    assert list(seen) == ["leap.py"] and CODE.upper() in seen["leap.py"]
