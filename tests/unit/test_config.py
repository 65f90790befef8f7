"""Settings and policy files: typed, frozen, and errors that name the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy.cli.main import main
from proxy.engine.detectors.stuck_same_diagnostic import AFTER as STUCK_SAME_DIAGNOSTIC_AFTER
from proxy.engine.plan.rules import Rules
from proxy.engine.text.tokens import TOKENIZER_BYTES
from proxy.http.runtime.tenancy import Shared
from proxy.settings.config import (
    DEFAULT_HOST,
    DEFAULT_UPSTREAM,
    MIN_STATE_CACHE_BYTES,
    TeamSettings,
    load_settings,
)
from proxy.settings.policy import default_policy, load_policy
from proxy.settings.problems import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_are_loopback_and_ollama() -> None:
    """With no file the proxy listens on loopback and forwards to Ollama's /v1."""
    settings = load_settings(None)
    assert settings.server.host == DEFAULT_HOST == "127.0.0.1"
    assert settings.upstream.base_url == DEFAULT_UPSTREAM == "http://127.0.0.1:11434/v1"


def test_example_config_is_valid_and_documents_every_key() -> None:
    """config.example.toml parses, and every settings key appears in it."""
    settings = load_settings(ROOT / "config.example.toml")
    text = (ROOT / "config.example.toml").read_text()
    for section, model in settings:
        if section in ("source", "team"):
            continue
        assert f"[{section}]" in text
        for key in type(model).model_fields:
            assert f"\n{key} =" in text, f"{section}.{key} is not documented"
    assert "# [[team]]" in text
    for key in TeamSettings.model_fields:
        assert f"\n# {key} =" in text, f"team.{key} is not documented"


def test_unknown_and_invalid_keys_name_file_and_key(tmp_path: Path) -> None:
    """Every bad key is reported with its file and dotted key."""
    path = tmp_path / "bad.toml"
    path.write_text('[upstream]\nbase_urll = "x"\nconnect_timeout = -1\n[server]\nport = "many"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    keys = {(p.file, p.key) for p in caught.value.problems}
    assert keys == {
        (str(path), "upstream.base_urll"),
        (str(path), "upstream.connect_timeout"),
        (str(path), "server.port"),
    }


def test_a_state_cache_bound_below_the_tokenizers_charge_is_refused(tmp_path: Path) -> None:
    """The bound must hold the tokenizer (charged to it) and a few MiB of states."""
    assert MIN_STATE_CACHE_BYTES >= TOKENIZER_BYTES + (4 << 20)
    path = tmp_path / "small.toml"
    path.write_text(f"[store]\nstate_cache_bytes = {MIN_STATE_CACHE_BYTES - 1}\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert {(p.file, p.key) for p in caught.value.problems} == {(str(path), "store.state_cache_bytes")}
    path.write_text(f"[store]\nstate_cache_bytes = {MIN_STATE_CACHE_BYTES}\n")
    assert load_settings(path).store.state_cache_bytes == MIN_STATE_CACHE_BYTES


def test_the_byte_bound_is_shared_by_the_tokenizer_the_states_and_the_spans(tmp_path: Path) -> None:
    """What the caches may hold plus the tokenizer's charge is the configured bound."""
    path = tmp_path / "bound.toml"
    path.write_text(f"[store]\nstate_cache_bytes = {64 << 20}\n")
    shared = Shared.of(load_settings(path))
    states, spans = shared.cache.max_bytes, shared.spans.max_bytes
    assert states is not None and spans is not None
    assert TOKENIZER_BYTES + states + spans == 64 << 20
    assert states == 3 * spans


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    """REPAIR_PROXY_* variables beat the file; flags beat both."""
    path = tmp_path / "c.toml"
    path.write_text('[upstream]\nbase_url = "http://file/v1"\n[server]\nport = 1000\n')
    settings = load_settings(
        path,
        environ={"REPAIR_PROXY_UPSTREAM": "http://env/v1", "REPAIR_PROXY_PORT": "2000", "REPAIR_PROXY_REPAIR": "off"},
        overrides={"server": {"port": 3000}},
    )
    assert settings.upstream.base_url == "http://env/v1"
    assert settings.server.port == 3000
    assert settings.repair.enabled is False


def test_settings_are_frozen() -> None:
    """Parsed once, never changed at a random call site."""
    settings = load_settings(None)
    with pytest.raises(ValueError):
        settings.server.port = 1  # type: ignore[misc]


def test_check_config_exits_nonzero_naming_each_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`repair-proxy check-config` prints file: key: message for each problem and exits 2."""
    path = tmp_path / "bad.toml"
    path.write_text("[limits]\nmax_body_bytes = 0\nsurprise = 1\n")
    assert main(["check-config", str(path)], environ={}) == 2
    err = capsys.readouterr().err
    assert f"{path}: limits.max_body_bytes:" in err
    assert f"{path}: limits.surprise:" in err


def test_check_config_accepts_the_example(capsys: pytest.CaptureFixture[str]) -> None:
    """The shipped example passes its own check."""
    assert main(["check-config", str(ROOT / "config.example.toml")], environ={}) == 0
    assert "ok" in capsys.readouterr().out


def test_policy_errors_name_file_and_key(tmp_path: Path) -> None:
    """A policy with a bad placement is refused naming the file and the key; a non-rising ladder
    and a pattern's own option out of range, when the engine compiles it, naming each key."""
    path = tmp_path / "p.toml"
    path.write_text('[repair]\nplacement = "sideways"\n')
    with pytest.raises(ConfigError) as caught:
        load_policy(path)
    assert [(p.file, p.key) for p in caught.value.problems] == [(str(path), "repair.placement")]
    path.write_text(
        '[patterns.stuck_same_diagnostic]\nafter = 4\nescalate = [{ at = 3, action = "halt" }]\n'
        "[patterns.read_stagnation]\nread_share = 2\n"
    )
    with pytest.raises(ConfigError) as caught:
        Rules.of(load_policy(path))
    keys = [p.key for p in caught.value.problems]
    assert any(k.startswith("patterns.stuck_same_diagnostic") for k in keys)
    assert "patterns.read_stagnation.read_share" in keys
    assert all(p.file == str(path) for p in caught.value.problems)


def test_a_loops_key_that_moved_to_its_pattern_says_where_it_went(tmp_path: Path) -> None:
    """`[loops] read_share` now belongs to `[patterns.read_stagnation]`: the error says where to
    look for it."""
    path = tmp_path / "p.toml"
    path.write_text("[loops]\nread_share = 0.5\n")
    with pytest.raises(ConfigError) as caught:
        load_policy(path)
    assert "read_share" in str(caught.value) and "repair-proxy patterns" in str(caught.value)


def test_policy_file_is_laid_over_the_default(tmp_path: Path) -> None:
    """A policy that sets one key keeps every other default, classification rules included."""
    path = tmp_path / "p.toml"
    path.write_text('[repair]\nplacement = "user"\n')
    policy = load_policy(path)
    assert policy.repair.placement == "user"
    assert Rules.of(policy).options["stuck_same_diagnostic"].after == STUCK_SAME_DIAGNOSTIC_AFTER
    assert policy.classify.tools == default_policy().classify.tools
