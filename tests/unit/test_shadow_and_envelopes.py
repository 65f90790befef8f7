"""A pattern in shadow trips and counts and changes nothing; a labelled envelope's bookkeeping is
no part of what a result says; a clean re-run of the failing check clears it; lines every command
prints are no failure's signature. Each a must and a must-not."""

from __future__ import annotations

from typing import Any

import pytest
from chat import Chat
from scenario_loader import analyse

from proxy.engine.core import Engine
from proxy.engine.outputs.envelope import payload
from proxy.engine.outputs.evidence import evidence
from proxy.engine.outputs.labels import bookkeeping_dropped
from proxy.engine.reading.canonical import output_digest
from proxy.settings.policy import policy_from_mapping

SHELL = [
    {
        "type": "function",
        "function": {
            "name": "run_shell_command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    }
]


def gemini(command: str, output: str, pgid: int, code: int = 0) -> str:
    """gemini cli's shell result, as its shell tool frames it."""
    return (
        f"Command: {command}\nDirectory: (root)\nOutput: {output}\nError: (none)\nExit Code: {code}\n"
        f"Signal: (none)\nBackground PIDs: (none)\nProcess Group PGID: {pgid}"
    )


def _trips(turns: list[tuple[str, str]], policy: dict[str, Any] | None = None) -> list[tuple[int, str, str, bool]]:
    engine = Engine.of(policy_from_mapping(policy or {}, "<test>"))
    chat = Chat(tools=SHELL)
    found = []
    for index, (command, printed) in enumerate(turns, 1):
        chat.turn(("run_shell_command", {"command": command}, printed))
        planned = analyse(engine, chat.bytes())
        assert planned is not None
        found += [(index, t.pattern.name, t.action.value, t.shadow) for t in planned.decision.new_trips]
    return found


def test_identical_calls_whose_envelopes_differ_only_in_bookkeeping_repeat() -> None:
    """Six `git status --short` through gemini cli's shell tool, results differing only in the
    process group id (the case from the held-out runs): repeat_call trips at the third."""
    turns = [("git status --short", gemini("git status --short", " M src/a.py", 4000 + i)) for i in range(6)]
    assert next((t, p) for t, p, _a, _s in _trips(turns) if p == "repeat_call") == (3, "repeat_call")


def test_identical_calls_whose_output_changes_do_not_repeat() -> None:
    """The pair: the same call, its output changing each time (a file being written): no repeat."""
    turns = [("git status --short", gemini("git status --short", f" M src/a{i}.py", 4000)) for i in range(6)]
    assert not [p for _t, p, _a, _s in _trips(turns) if p in ("repeat_call", "repeat_output")]


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        pytest.param(
            gemini("ls", "a.py", 77), "Output: a.py\nError: (none)\nExit Code: 0\nSignal: (none)", id="gemini"
        ),
        pytest.param("Exit code: 1\nWall time: 0.4 seconds\nOutput:\nboom", "Exit code: 1\nOutput:\nboom", id="codex"),
        pytest.param("collected 3\nRan: 3\nFailed: 1", "collected 3\nRan: 3\nFailed: 1", id="a report's own counts"),
        pytest.param("Status: ok\nOwner: me\nbody", "Status: ok\nOwner: me\nbody", id="labels with no stream"),
        pytest.param("plain output\nLabel: value", "plain output\nLabel: value", id="one label line"),
    ],
)
def test_bookkeeping_dropped(text: str, kept: str) -> None:
    assert bookkeeping_dropped(text) == kept


def test_envelope_bookkeeping_is_no_part_of_the_digest() -> None:
    assert output_digest(gemini("ls", "a.py", 1)) == output_digest(gemini("ls", "a.py", 2))
    assert output_digest(gemini("ls", "a.py", 1)) != output_digest(gemini("ls", "b.py", 1))
    assert output_digest(gemini("ls", "a.py", 1, code=0)) != output_digest(gemini("ls", "a.py", 1, code=1))


def test_an_observation_label_is_framing() -> None:
    """SWE-agent's results open with `OBSERVATION:`: what the result says starts after it."""
    assert payload("OBSERVATION:\nNo replacement was performed, old_str `x` did not appear verbatim") == (
        "No replacement was performed, old_str `x` did not appear verbatim"
    )


STUCK = [
    ("python -m pytest tests/test_parse.py", "E   AssertionError: assert 3 == 2\n1 failed in 0.1s\n[exit code: 1]")
] * 4


def test_a_pattern_in_shadow_trips_and_changes_nothing() -> None:
    """stuck_same_diagnostic switched to shadow: its trip is there (its would-be action with
    it), marked shadow, and the request goes upstream as it came: no instruction, no pin."""
    policy = {"patterns": {"stuck_same_diagnostic": {"mode": "shadow"}}}
    engine = Engine.of(policy_from_mapping(policy, "<test>"))
    chat = Chat(tools=SHELL)
    shadowed = []
    for command, printed in STUCK:
        chat.turn(("run_shell_command", {"command": command}, printed))
        planned = analyse(engine, chat.bytes())
        assert planned is not None
        shadowed += [t for t in planned.decision.new_trips if t.pattern.name == "stuck_same_diagnostic"]
        assert planned.decision.edit is None, "a shadow trip changed the request"
        assert planned.decision.halt is None
    assert shadowed and all(t.shadow for t in shadowed)


def test_the_same_pattern_acting_speaks() -> None:
    """The pair: the same turns with the pattern acting: an instruction goes upstream."""
    engine = Engine.of(policy_from_mapping({"patterns": {"stuck_same_diagnostic": {"mode": "act"}}}, "<test>"))
    chat = Chat(tools=SHELL)
    edits = []
    for command, printed in STUCK:
        chat.turn(("run_shell_command", {"command": command}, printed))
        planned = analyse(engine, chat.bytes())
        assert planned is not None
        edits.append(planned.decision.edit)
    assert edits[2] is not None and not any(t.shadow for t in planned.decision.state.trips)


def test_a_clean_rerun_of_the_failing_script_clears_it() -> None:
    """A reproduction script fails, is fixed, runs clean (no exit code printed, no pass marker:
    SWE-agent's results): the failure is gone, nothing is owed, and stuck never trips on it."""
    engine = Engine.of(policy_from_mapping({}, "<test>"))
    chat = Chat(tools=SHELL)
    steps = [
        ("python reproduce.py", 'Traceback (most recent call last):\n  File "reproduce.py", line 3\nTypeError: boom'),
        ("sed -i 's/a/b/' src/mod.py", ""),
        ("python reproduce.py", "result: [1, 2, 3]"),
    ]
    for command, printed in steps:
        chat.turn(("run_shell_command", {"command": command}, printed))
        planned = analyse(engine, chat.bytes())
        assert planned is not None
    repair = planned.decision.state.repair
    assert not repair.live and not repair.reverify_owed


def test_a_rerun_that_still_fails_keeps_it() -> None:
    """The pair: the same script run again and failing the same way: still live, streak 2."""
    engine = Engine.of(policy_from_mapping({}, "<test>"))
    chat = Chat(tools=SHELL)
    boom = 'Traceback (most recent call last):\n  File "reproduce.py", line 3\nTypeError: boom'
    for command, printed in [
        ("python reproduce.py", boom),
        ("sed -i 's/a/b/' src/mod.py", ""),
        ("python reproduce.py", boom),
    ]:
        chat.turn(("run_shell_command", {"command": command}, printed))
        planned = analyse(engine, chat.bytes())
        assert planned is not None
    assert planned.decision.state.repair.live and planned.decision.state.repair.same_diagnostic_streak == 2


NOISE = (
    "Error processing line 1 of /opt/conda/lib/python3.9/site-packages/distutils-precedence.pth:\n"
    "  Traceback (most recent call last):\n"
    "ModuleNotFoundError: No module named '_distutils_hack'\n"
    "Remainder of file ignored\n"
)


def test_lines_every_command_prints_are_no_signature() -> None:
    """Different experiments, each printing the interpreter's broken-.pth noise and its own
    result: not one failure repeated (the held-out run handed back at turn 53 of 54)."""
    turns = [(f"python experiment_{i}.py", NOISE + f"value {i}") for i in range(8)]
    assert not [p for _t, p, _a, _s in _trips(turns) if p == "stuck_same_diagnostic"]


def test_the_same_experiment_failing_the_same_way_is_still_one_failure() -> None:
    """The pair: one script failing the same way each time, the noise around it: it repeats."""
    boom = NOISE + 'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: bad input\n'
    warm = [(f"python experiment_{i}.py", NOISE + f"value {i}") for i in range(3)]
    turns = warm + [("python x.py", boom)] * 3
    stuck = [t for t, p, _a, _s in _trips(turns) if p == "stuck_same_diagnostic"]
    assert stuck == [6]


def test_evidence_keeps_its_lines_when_all_are_ambient_and_nothing_else_is_left() -> None:
    picked = evidence("ValueError: bad input")
    assert evidence("ValueError: bad input", frozenset({"not-a-line"})) == picked
