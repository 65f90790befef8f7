"""Every scenario through `repair-proxy replay`: exactly the trips it names, on the turns it names."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from scenario_loader import load, names
from support import policy_toml

from proxy.cli.main import main


@pytest.fixture(params=names())
def scenario_file(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path, Path | None]:
    scenario = load(request.param)
    jsonl = tmp_path / f"{scenario.name}.jsonl"
    jsonl.write_bytes(b"\n".join(scenario.requests()) + b"\n")
    policy = None
    if scenario.policy_raw:
        policy = tmp_path / "policy.toml"
        policy.write_text(policy_toml(scenario.policy_raw))
    return request.param, jsonl, policy


def test_scenario_replays_to_its_expected_trips(
    scenario_file: tuple[str, Path, Path | None], capsys: pytest.CaptureFixture[str]
) -> None:
    """Replay --json prints one record per request with exactly the scenario's trips and final state."""
    name, jsonl, policy = scenario_file
    scenario = load(name)
    argv = ["replay", str(jsonl), "--json"] + (["--policy", str(policy)] if policy else [])
    assert main(argv, environ={}) == 0
    records = [orjson.loads(line) for line in capsys.readouterr().out.splitlines()]
    requests = scenario.requests_with_turns()
    assert len(records) == len(requests)
    for record, (_body, turns) in zip(records, requests, strict=True):
        assert set(record) == {"request", "state", "trips", "injected"}
        got = [[t["pattern"], t["action"]] for t in record["trips"]]
        assert got == scenario.expected_for(turns), (
            f"request {record['request']} (turns {list(turns)}): {scenario.behaviour}"
        )
        assert all(t["turn"] in turns for t in record["trips"])
    for key, value in scenario.expect.get("state", {}).items():
        assert records[-1]["state"][key] == value, key
    for turn, needles in scenario.expect.get("injected", {}).items():
        index = next(i for i, (_b, turns) in enumerate(requests) if int(turn) in turns)
        texts = "\n".join(i["text"] for i in records[index]["injected"])
        for needle in needles:
            assert needle in texts
    if "halt_at" in scenario.expect:
        halted = [
            requests[r["request"]][1][-1] for r in records if any(i["placement"] == "handback" for i in r["injected"])
        ]
        assert halted == [scenario.expect["halt_at"]]


def test_replay_text_timeline_is_readable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --json, replay prints a timeline naming each trip and the injected text; a trip of a
    pattern in shadow (stuck_same_diagnostic by default) is named as such, and nothing is placed."""
    scenario = load("stuck_edit_retest_thrash")
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(scenario.requests()))
    policy = tmp_path / "policy.toml"
    policy.write_text(policy_toml(scenario.policy_raw))
    assert main(["replay", str(path), "--policy", str(policy)], environ={}) == 0
    out = capsys.readouterr().out
    assert "TRIP stuck_same_diagnostic -> nudge (turn 5)" in out
    assert "system after turn 5 [stuck_same_diagnostic]" in out
    assert main(["replay", str(path)], environ={}) == 0
    out = capsys.readouterr().out
    assert "TRIP stuck_same_diagnostic -> nudge [shadow: said nothing] (turn 5)" in out
    assert "system after turn 5" not in out


def test_replay_rejects_a_file_that_is_not_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bad replay file is a clear error naming the line, exit 2."""
    path = tmp_path / "bad.jsonl"
    path.write_text('{"messages": []}\nnot json\n')
    assert main(["replay", str(path)], environ={}) == 2
    assert f"{path}:2: not JSON" in capsys.readouterr().err
