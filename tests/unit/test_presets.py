"""Agent presets: each classifies its agent's own calls right and trips on a real same-failure loop."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from chat import output
from scenario_loader import analyse, engine

from proxy.cli.main import main
from proxy.engine.plan.rules import Rules
from proxy.engine.reading.classify import Classifier
from proxy.settings.kinds import CallKind
from proxy.settings.policy import bundled_presets, load_policy
from proxy.settings.problems import ConfigError

ROOT = Path(__file__).resolve().parents[2]
Call = tuple[str, dict[str, Any]]
FAIL = output("@pytest_addition_a")
PASS_EDIT = "The file /workspace/src/parse.py has been edited."


def mini(text: str, code: int) -> str:
    return f"<returncode>{code}</returncode>\n<output>\n{text}\n</output>"


TEST = "cd /workspace && python -m pytest tests/test_parse.py"
# preset -> (read call, test call, edit call, how a failing test result looks)
AGENTS: dict[str, tuple[Call, Call, Callable[[int], Call], Callable[[str], str]]] = {
    "openhands": (
        ("str_replace_editor", {"command": "view", "path": "/workspace/src/parse.py"}),
        ("execute_bash", {"command": TEST}),
        lambda i: (
            "str_replace_editor",
            {"command": "str_replace", "path": "/workspace/src/parse.py", "old_str": f"v{i}", "new_str": f"v{i + 1}"},
        ),
        lambda out: out,
    ),
    "swe_agent": (
        ("str_replace_editor", {"command": "view", "path": "/workspace/src/parse.py"}),
        ("bash", {"command": TEST}),
        lambda i: (
            "str_replace_editor",
            {"command": "str_replace", "path": "/workspace/src/parse.py", "old_str": f"v{i}", "new_str": f"v{i + 1}"},
        ),
        lambda out: out,
    ),
    "mini_swe_agent": (
        ("bash", {"command": "cat /workspace/src/parse.py"}),
        ("bash", {"command": TEST}),
        lambda i: ("bash", {"command": f"sed -i 's/v{i}/v{i + 1}/' /workspace/src/parse.py"}),
        lambda out: mini(out.replace("[Command finished with exit code 1]", ""), 1),
    ),
    "claude_code": (
        ("Read", {"file_path": "/workspace/src/parse.py"}),
        ("Bash", {"command": TEST, "description": "Run the failing test"}),
        lambda i: ("Edit", {"file_path": "/workspace/src/parse.py", "old_string": f"v{i}", "new_string": f"v{i + 1}"}),
        lambda out: out,
    ),
    "codex": (
        ("shell", {"command": ["bash", "-lc", "cat src/parse.py"], "workdir": "/workspace"}),
        ("shell", {"command": ["bash", "-lc", "python -m pytest tests/test_parse.py"], "workdir": "/workspace"}),
        lambda i: (
            "apply_patch",
            {"input": f"*** Begin Patch\n*** Update File: src/parse.py\n-v{i}\n+v{i + 1}\n*** End Patch"},
        ),
        lambda out: out,
    ),
    "cline": (
        ("read_file", {"path": "src/parse.py"}),
        ("execute_command", {"command": "python -m pytest tests/test_parse.py", "requires_approval": False}),
        lambda i: (
            "replace_in_file",
            {"path": "src/parse.py", "diff": f"<<<<<<< SEARCH\nv{i}\n=======\nv{i + 1}\n>>>>>>> REPLACE"},
        ),
        lambda out: out,
    ),
    "goose": (
        ("developer__text_editor", {"command": "view", "path": "/workspace/src/parse.py"}),
        ("developer__shell", {"command": TEST}),
        lambda i: (
            "developer__text_editor",
            {"command": "str_replace", "path": "/workspace/src/parse.py", "old_str": f"v{i}", "new_str": f"v{i + 1}"},
        ),
        lambda out: out,
    ),
    "generic": (
        ("open_file", {"path": "/workspace/src/parse.py"}),
        ("run", {"cmd": TEST}),
        lambda i: ("patch_file", {"path": "/workspace/src/parse.py", "diff": f"-v{i}\n+v{i + 1}"}),
        lambda out: out,
    ),
}


def transcript(agent: str) -> list[bytes]:
    """read, test (fail), edit, test (same failure), edit, test (same failure): a request after each turn."""
    read, test, edit, wrap = AGENTS[agent]
    turns = [
        (read, "def parse(s):\n    return 'v1'\n"),
        (test, wrap(FAIL)),
        (edit(1), PASS_EDIT),
        (test, wrap(FAIL)),
        (edit(2), PASS_EDIT),
        (test, wrap(FAIL)),
    ]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": f"You are {agent}."},
        {"role": "user", "content": "Fix tests/test_parse.py."},
    ]
    bodies = []
    for i, ((name, arguments), result) in enumerate(turns):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"{agent}-{i}",
                        "type": "function",
                        "function": {"name": name, "arguments": orjson.dumps(arguments).decode()},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"{agent}-{i}", "content": result})
        bodies.append(orjson.dumps({"model": "m", "messages": messages}))
    return bodies


def test_every_bundled_preset_has_a_scenario() -> None:
    """Each preset shipped is exercised below."""
    assert set(bundled_presets()) - {"default"} == set(AGENTS)


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_preset_classifies_its_agents_calls(agent: str) -> None:
    """Reads read, test runs verify, edits mutate, in the agent's own tool vocabulary."""
    classifier = Classifier(load_policy(ROOT / "policies" / f"{agent}.toml").classify)
    read, test, edit, _ = AGENTS[agent]
    assert classifier.classify(*read).kind is CallKind.READ
    assert classifier.classify(*test).kind is CallKind.VERIFY
    result = classifier.classify(*edit(1))
    assert result.mutates


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_preset_trips_on_a_real_same_failure_loop(agent: str) -> None:
    """test, edit, test, edit, test with the same failure trips stuck_same_diagnostic on the last request only."""
    eng = engine(load_policy(ROOT / "policies" / f"{agent}.toml"))
    trips = [[t.pattern.name for t in analyse(eng, body).decision.new_trips] for body in transcript(agent)]  # type: ignore[union-attr]
    assert trips == [[], [], [], [], [], ["stuck_same_diagnostic"]]


def test_extends_chain_and_cycles(tmp_path: Path) -> None:
    """A policy extends a preset by name or a file by path; a cycle is an error naming the file."""
    (tmp_path / "base.toml").write_text('extends = "openhands"\n[repair]\nplacement = "user"\n')
    (tmp_path / "team.toml").write_text('extends = "base.toml"\n[patterns.stuck_same_diagnostic]\nafter = 4\n')
    policy = load_policy(tmp_path / "team.toml")
    after = Rules.of(policy).options["stuck_same_diagnostic"].after
    assert (policy.repair.placement, policy.repair.verify_tool, after) == (
        "user",
        "execute_bash",
        4,
    )
    (tmp_path / "a.toml").write_text('extends = "b.toml"\n')
    (tmp_path / "b.toml").write_text('extends = "a.toml"\n')
    with pytest.raises(ConfigError, match="extends itself"):
        load_policy(tmp_path / "a.toml")
    (tmp_path / "c.toml").write_text('extends = "nosuch"\n')
    with pytest.raises(ConfigError, match="no preset 'nosuch'"):
        load_policy(tmp_path / "c.toml")


def test_check_policy_reports_file_and_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`repair-proxy check-policy` exits 2 naming file and key; 0 for every bundled preset."""
    bad = tmp_path / "bad.toml"
    bad.write_text('extends = "claude_code"\n[patterns.repeat_call]\nafter = 0\n[patterns.repeat_output]\nring = 1\n')
    assert main(["check-policy", str(bad)], environ={}) == 2
    err = capsys.readouterr().err
    assert f"{bad}: patterns.repeat_call.after:" in err and f"{bad}: patterns.repeat_output.ring:" in err
    for preset in bundled_presets():
        assert main(["check-policy", str(ROOT / "policies" / f"{preset}.toml")], environ={}) == 0


CLAUDE_CODE_CALLS = [
    ("Bash", {"command": "python -m pytest -q tests/test_parse.py", "description": "Run the tests"}, CallKind.VERIFY),
    ("Bash", {"command": "cat src/parse.py"}, CallKind.READ),
    ("Bash", {"command": "npm install --save lodash"}, CallKind.OTHER),
    ("Read", {"file_path": "/w/src/parse.py", "offset": 10, "limit": 20}, CallKind.READ),
    ("LS", {"path": "/w/src"}, CallKind.READ),
    ("Edit", {"file_path": "/w/src/parse.py", "old_string": "a", "new_string": "b"}, CallKind.EDIT),
    ("MultiEdit", {"file_path": "/w/src/parse.py", "edits": [{"old_string": "a", "new_string": "b"}]}, CallKind.EDIT),
    ("Write", {"file_path": "/w/src/new.py", "content": "x = 1\n"}, CallKind.EDIT),
    ("NotebookEdit", {"notebook_path": "/w/n.ipynb", "new_source": "x"}, CallKind.EDIT),
    ("Grep", {"pattern": "def parse", "path": "/w"}, CallKind.SEARCH),
    ("Glob", {"pattern": "**/*.py"}, CallKind.SEARCH),
    ("WebSearch", {"query": "pytest fixtures"}, CallKind.SEARCH),
    ("BashOutput", {"bash_id": "b1"}, CallKind.POLL),
    ("Monitor", {"task_id": "b1"}, CallKind.POLL),
    ("TodoWrite", {"todos": [{"content": "fix", "status": "pending"}]}, CallKind.OTHER),
    ("WebFetch", {"url": "https://docs.python.org", "prompt": "summarise"}, CallKind.OTHER),
    ("Task", {"description": "search", "prompt": "find parse", "subagent_type": "Explore"}, CallKind.OTHER),
    ("Agent", {"description": "search", "prompt": "find parse"}, CallKind.OTHER),
    ("KillShell", {"shell_id": "b1"}, CallKind.OTHER),
    ("Skill", {"skill": "dataviz"}, CallKind.OTHER),
    ("ToolSearch", {"query": "select:WebFetch"}, CallKind.OTHER),
]
"""Claude Code's tools (1.x, 2.0 and 2.1: `claude -p` 2.1.332 offers Agent, Bash, Edit, Read, Skill,
ToolSearch, Write and more, with WebFetch and friends deferred behind ToolSearch) and what each
call is to the `claude_code` preset."""


@pytest.mark.parametrize(
    ("tool", "arguments", "kind"), CLAUDE_CODE_CALLS, ids=[f"{c[0]}-{c[2].value}" for c in CLAUDE_CODE_CALLS]
)
def test_the_claude_code_preset_reads_every_claude_code_tool(
    tool: str, arguments: dict[str, Any], kind: CallKind
) -> None:
    classifier = Classifier(load_policy(ROOT / "policies" / "claude_code.toml").classify)
    found = classifier.classify(tool, arguments)
    assert found.kind is kind
    if kind is CallKind.EDIT:
        assert found.mutates and [w.path for w in found.writes] == [
            next(v for k, v in arguments.items() if k.endswith("path"))
        ]
