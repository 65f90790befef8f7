"""A file named in the settings that cannot be used is refused at start, naming where the value
came from: the config file, the environment variable, or the command line (never `<defaults>`),
and a relative path is taken relative to that: the config file's directory for the file's
values, the working directory for a variable's or a flag's."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from proxy.http.runtime.tenancy import build_runtime
from proxy.settings.config import load_settings
from proxy.settings.problems import ConfigError

CERT_ENV = "environment REPAIR_PROXY_UPSTREAM_CLIENT_CERT"


@dataclass(frozen=True)
class Case:
    name: str
    config: str | None
    """The config file's text (in `<tmp>/conf/`), None: no file."""
    environ: dict[str, str] = field(default_factory=dict)
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    blamed: str = ""
    """Where the problem says the value came from (`{config}`: the file's path)."""
    key: str = "upstream.client_cert"
    says: str = ""
    """How the message begins: the path as resolved (`{tmp}`, `{conf}`: the directories)."""


CASES = [
    Case(
        "cert in the file, relative to it",
        '[upstream]\nclient_cert = "missing.crt"\n',
        blamed="{config}",
        says="{conf}/missing.crt cannot be used as a client certificate",
    ),
    Case(
        "cert from its variable, no file",
        None,
        {"REPAIR_PROXY_UPSTREAM_CLIENT_CERT": "{tmp}/missing.crt"},
        blamed=CERT_ENV,
        says="{tmp}/missing.crt cannot be used",
    ),
    Case(
        "cert from its variable beside a file: relative to the working directory",
        '[upstream]\napi_key = "k"\n',
        {"REPAIR_PROXY_UPSTREAM_CLIENT_CERT": "missing.crt"},
        blamed=CERT_ENV,
        says="missing.crt cannot be used",
    ),
    Case(
        "cert from its variable over the file's",
        '[upstream]\nclient_cert = "in-file.crt"\n',
        {"REPAIR_PROXY_UPSTREAM_CLIENT_CERT": "{tmp}/missing.crt"},
        blamed=CERT_ENV,
        says="{tmp}/missing.crt cannot be used",
    ),
    Case(
        "cert and key from their variables",
        None,
        {
            "REPAIR_PROXY_UPSTREAM_CLIENT_CERT": "{tmp}/missing.crt",
            "REPAIR_PROXY_UPSTREAM_CLIENT_KEY": "{tmp}/missing.key",
        },
        blamed=CERT_ENV,
        says="{tmp}/missing.crt with key {tmp}/missing.key cannot be used",
    ),
    Case(
        "cert in the file, key from its variable",
        '[upstream]\nclient_cert = "missing.crt"\n',
        {"REPAIR_PROXY_UPSTREAM_CLIENT_KEY": "{tmp}/missing.key"},
        blamed="{config}",
        says="{conf}/missing.crt with key {tmp}/missing.key (the key from environment REPAIR_PROXY_UPSTREAM_CLIENT_KEY)",
    ),
    Case(
        "cert given in code, as the command line's flags are",
        None,
        overrides={"upstream": {"client_cert": "{tmp}/missing.crt"}},
        blamed="command line",
        says="{tmp}/missing.crt cannot be used",
    ),
    Case(
        "policy in the file, relative to it",
        '[repair]\npolicy = "missing.toml"\n',
        blamed="{config}",
        key="repair.policy",
        says="{conf}/missing.toml: no such file",
    ),
    Case(
        "policy from its variable beside a file: relative to the working directory",
        '[upstream]\napi_key = "k"\n',
        {"REPAIR_PROXY_POLICY": "missing.toml"},
        blamed="environment REPAIR_PROXY_POLICY",
        key="repair.policy",
        says="missing.toml: no such file",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_an_unusable_file_names_where_its_setting_came_from(case: Case, tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    config = conf / "config.toml"
    places = {"tmp": str(tmp_path), "conf": str(conf), "config": str(config)}
    if case.config is not None:
        config.write_text('[store]\nverdicts = ""\n' + case.config)
    environ = {k: v.format(**places) for k, v in case.environ.items()}
    overrides = {s: {k: v.format(**places) for k, v in values.items()} for s, values in case.overrides.items()}
    overrides.setdefault("store", {})["verdicts"] = ""
    with pytest.raises(ConfigError) as caught:
        build_runtime(load_settings(config if case.config is not None else None, environ=environ, overrides=overrides))
    (problem,) = caught.value.problems
    assert (problem.file, problem.key) == (case.blamed.format(**places), case.key)
    assert problem.message.startswith(case.says.format(**places)), problem.message
    assert "<defaults>" not in str(caught.value)


def test_only_the_keys_a_variable_or_a_flag_set_are_blamed_on_them(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[upstream]\nclient_cert = "c.pem"\n')
    settings = load_settings(config, environ={"REPAIR_PROXY_POLICY": "p.toml"}, overrides={"server": {"port": 1}})
    assert settings.origin("upstream.client_cert") == str(config)
    assert settings.origin("repair.policy") == "environment REPAIR_PROXY_POLICY"
    assert settings.origin("server.port") == "command line"
    assert settings.base_of("upstream.client_cert") == tmp_path
    assert settings.base_of("repair.policy") == Path()
    assert load_settings(None).origin("upstream.client_cert") == "<defaults>"
