"""Every pattern, whole in its file: its documented defaults are true, its name is checked,
and it has a scenario that must trip it and a near miss that must not."""

from __future__ import annotations

import importlib
import tomllib
from importlib import resources
from pathlib import Path

import pytest
from scenario_loader import load, names

from proxy.cli.main import main
from proxy.engine.detectors import BY_NAME, REGISTRY, Pattern
from proxy.engine.plan.rules import Rules
from proxy.settings.policy import default_policy, policy_from_mapping
from proxy.settings.problems import ConfigError

DEFAULT_TOML = tomllib.loads(resources.files("proxy").joinpath("defaults/default.toml").read_text())


def test_the_default_policy_leaves_every_pattern_to_its_own_file() -> None:
    """A pattern's defaults are declared once, in its detector file: default.toml has no
    `[patterns.*]` table to drift from them."""
    assert "patterns" not in DEFAULT_TOML


def test_repair_proxy_patterns_prints_every_default_as_policy_toml(capsys: pytest.CaptureFixture[str]) -> None:
    """`repair-proxy patterns` prints each pattern's defaults as TOML that, given back as a
    policy, compiles to exactly those defaults."""
    assert main(["patterns"], environ={}) == 0
    printed = tomllib.loads(capsys.readouterr().out)
    assert set(printed["patterns"]) == {d.name for d in REGISTRY}
    rules = Rules.of(policy_from_mapping(printed, "printed"))
    assert all(rules.options[d.name] == d.options for d in REGISTRY)


def test_a_pattern_table_is_laid_over_its_defaults() -> None:
    """Setting one option keeps the others, the ladder included."""
    rules = Rules.of(policy_from_mapping({"patterns": {"read_stagnation": {"read_share": 0.5}}}, "t"))
    options = rules.options["read_stagnation"]
    assert options.model_dump() == {**BY_NAME["read_stagnation"].options.model_dump(), "read_share": 0.5}


@pytest.mark.parametrize("detector", REGISTRY, ids=lambda d: d.name)
def test_every_pattern_has_a_must_trip_and_a_must_not_trip_scenario(detector: Pattern) -> None:
    about = [load(n) for n in names() if load(n).pattern == detector.name]
    assert any(s.trips_its_pattern for s in about), f"no scenario trips {detector.name}"
    assert any(not s.trips_its_pattern for s in about), f"no near miss for {detector.name}"


@pytest.mark.parametrize("detector", REGISTRY, ids=lambda d: d.name)
def test_each_pattern_is_one_file_named_after_it(detector: Pattern) -> None:
    """`proxy/engine/detectors/<name>.py` exports the detector, and its docstring says what the
    pattern must never fire on."""
    module = importlib.import_module(f"proxy.engine.detectors.{detector.name}")
    assert module.DETECTOR is detector
    assert "Must never fire on" in (module.__doc__ or "")


def test_a_pattern_left_out_of_a_policy_keeps_its_default() -> None:
    rules = Rules.of(policy_from_mapping({"patterns": {}}, "t"))
    assert all(rules.options[d.name] == d.options for d in REGISTRY)


def test_a_policy_naming_an_unknown_pattern_is_refused_with_file_and_key() -> None:
    policy = default_policy().model_copy(update={"patterns": {"stuck_forever": {"after": 2}}, "source": "p.toml"})
    with pytest.raises(ConfigError) as caught:
        Rules.of(policy)
    assert str(caught.value).startswith("p.toml: patterns.stuck_forever: no such pattern")


def test_check_policy_refuses_an_unknown_pattern(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "team.toml"
    bad.write_text("[patterns.stuck_forever]\nafter = 2\n")
    assert main(["check-policy", str(bad)], environ={}) == 2
    assert f"{bad}: patterns.stuck_forever: no such pattern" in capsys.readouterr().err
