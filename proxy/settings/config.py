"""The proxy's settings: `config.toml` parsed once into frozen typed objects.

Precedence, lowest first: embedded defaults, the config file, environment variables
(`ENV_OVERRIDES`), command-line flags. The environment is read here and nowhere else.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from proxy.settings.problems import ConfigError, ConfigProblem, problems_of, read_toml

__all__ = [
    "DEFAULT_DRAIN_TIMEOUT",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "DEFAULT_UPSTREAM",
    "ENV_OVERRIDES",
    "MAX_AUTO_WORKERS",
    "MIN_STATE_CACHE_BYTES",
    "Settings",
    "TeamSettings",
    "check_base_url",
    "load_settings",
]

DEFAULT_UPSTREAM = "http://127.0.0.1:11434/v1"
"""Ollama's OpenAI-compatible endpoint on the same machine."""
DEFAULT_HOST = "127.0.0.1"
"""Loopback: exposing the proxy is an explicit choice."""
DEFAULT_PORT = 8400
DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024
"""Request bodies above this get 413; agent transcripts of several MB are normal."""
DEFAULT_HEADER_TIMEOUT = 30.0
"""Seconds for a client's request headers (and a kept-alive connection's idle gap)."""
DEFAULT_DRAIN_TIMEOUT = 120.0
"""Seconds a stopping worker lets requests in flight finish: a long streamed generation (several
thousand tokens at tens per second) ends instead of being cut at a rollout."""
DEFAULT_BODY_TIMEOUT = 60.0
"""Seconds of silence allowed while a request body arrives."""
DEFAULT_ANALYSIS_BUDGET_MS = 100.0
"""Milliseconds one request's analysis may run before it is given up (fail-open, counted)."""
DEFAULT_LIVE_STATES = 1024
"""Conversations kept live per worker (and in at most a quarter of the states' bytes, see
`engine.state.cache.LIVE_SHARE`): more than one worker serves at once in practice, few enough
that a full garbage collection over them stays short (1,024 states of 24 turns: about 30,000
objects, 2.5 ms; of 100 turns: 4.5 ms)."""
MAX_AUTO_WORKERS = 4
"""`server.workers = 0` runs one worker per usable core, at most this many."""
MAX_WORKERS = 64

ENV_OVERRIDES: Mapping[str, tuple[str, str]] = {
    "REPAIR_PROXY_UPSTREAM": ("upstream", "base_url"),
    "REPAIR_PROXY_UPSTREAM_API_KEY": ("upstream", "api_key"),
    "REPAIR_PROXY_UPSTREAM_CLIENT_CERT": ("upstream", "client_cert"),
    "REPAIR_PROXY_UPSTREAM_CLIENT_KEY": ("upstream", "client_key"),
    "REPAIR_PROXY_HOST": ("server", "host"),
    "REPAIR_PROXY_PORT": ("server", "port"),
    "REPAIR_PROXY_WORKERS": ("server", "workers"),
    "REPAIR_PROXY_REPAIR": ("repair", "enabled"),
    "REPAIR_PROXY_POLICY": ("repair", "policy"),
    "REPAIR_PROXY_LOG_LEVEL": ("logging", "level"),
    "REPAIR_PROXY_VERDICTS": ("store", "verdicts"),
}
"""Environment variable -> (section, key) it overrides."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def check_base_url(value: str) -> str:
    """An upstream base URL: http(s), a host, no query; refused with an example otherwise."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{value!r} is not an http:// or https:// URL with a host (e.g. http://127.0.0.1:11434/v1)")
    if parts.query or parts.fragment:
        raise ValueError(f"{value!r}: a base URL has no query or fragment")
    return value


class ServerSettings(_Frozen):
    host: str = DEFAULT_HOST
    port: int = Field(default=DEFAULT_PORT, ge=0, le=65535)
    drain_timeout: float = Field(default=DEFAULT_DRAIN_TIMEOUT, ge=0)
    """Seconds in-flight requests get to finish on shutdown (a rollout's SIGTERM): long enough for
    one long generation. A supervisor or orchestrator must allow this plus a margin."""
    key_header: str = "X-Repair-Key"
    """A header that may carry the proxy key instead of Authorization (which then passes upstream)."""
    header_timeout: float = Field(default=DEFAULT_HEADER_TIMEOUT, gt=0)
    """Seconds a client has to send a request's headers, and the longest a kept-alive connection
    may sit idle between requests; then it is closed (slow clients never hold a connection)."""
    body_timeout: float = Field(default=DEFAULT_BODY_TIMEOUT, gt=0)
    """Longest silence while a request body is being sent (then 408)."""
    workers: int = Field(default=0, ge=0, le=MAX_WORKERS)
    """Processes serving the port; 0: one per usable core, at most `MAX_AUTO_WORKERS`. In a
    container with a CPU limit, set it to the limit (the core count seen is the node's)."""

    def worker_count(self) -> int:
        if self.workers:
            return self.workers
        return max(1, min(len(os.sched_getaffinity(0)), MAX_AUTO_WORKERS))


class UpstreamSettings(_Frozen):
    base_url: str = DEFAULT_UPSTREAM
    """The OpenAI-compatible base URL (with its `/v1`); see `check_base_url`."""
    api_key: str = ""
    """When set, replaces the agent's `Authorization` with this key (for teams without an `upstream_key`)."""
    connect_timeout: float = Field(default=10.0, gt=0)
    first_byte_timeout: float = Field(default=600.0, gt=0)
    """Seconds until the upstream's response headers arrive (non-streaming replies come whole)."""
    idle_timeout: float = Field(default=300.0, gt=0)
    """Longest gap between two chunks of a response body; a stream that keeps producing is never cut."""
    max_connections: int = Field(default=100, ge=1)
    client_cert: str = ""
    """A PEM client certificate (chain) presented to https upstreams that ask for one; relative
    as `Settings.base_of` says. Empty: none. The CAs trusted for the upstream's own certificate
    are the system's, or the file `SSL_CERT_FILE` names."""
    client_key: str = ""
    """The client certificate's private key (PEM, unencrypted); empty: in `client_cert`'s file."""

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str) -> str:
        return check_base_url(value)

    @model_validator(mode="after")
    def _key_needs_cert(self) -> UpstreamSettings:
        if self.client_key and not self.client_cert:
            raise ValueError("upstream.client_key is set without upstream.client_cert")
        return self


class LimitSettings(_Frozen):
    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, ge=1)
    analysis_budget_ms: float = Field(default=DEFAULT_ANALYSIS_BUDGET_MS, gt=0)
    """Milliseconds of wall time a request may wait for its analysis; past it, it goes up as it came."""


class RepairSettings(_Frozen):
    enabled: bool = True
    """Off: the proxy is byte-transparent in both directions."""
    policy: str = ""
    """Path to a policy TOML; empty uses the embedded default policy."""
    holdout_percent: float = Field(default=0.0, ge=0, le=100)
    """Share of conversations (chosen by conversation id) analysed and counted but never changed."""


DEFAULT_VERDICTS = "~/.local/state/repair-proxy/verdicts.sqlite3"


DEFAULT_STATE_CACHE_BYTES = 256 * 1024 * 1024
"""What analysis keeps in memory beyond the idle process, in bytes: the tokenizer (charged 28 MiB,
`engine.tokens.TOKENIZER_BYTES`), the working memory of the largest bodies analysed (see
`http.footprint`), then conversation states (3/4 of the rest, estimated per conversation; least
recently used goes first) and message spans with the last parses (1/4: `dialects.spans`)."""

MIN_STATE_CACHE_BYTES = 32 * 1024 * 1024
"""The least `store.state_cache_bytes` accepted: the tokenizer's charge and 4 MiB for states."""


class StoreSettings(_Frozen):
    state_cache_size: int = Field(default=10_000, ge=1)
    state_cache_bytes: int = Field(default=DEFAULT_STATE_CACHE_BYTES, ge=MIN_STATE_CACHE_BYTES)
    state_ttl_seconds: float = Field(default=24 * 3600.0, gt=0)
    live_states: int = Field(default=DEFAULT_LIVE_STATES, ge=1)
    """Conversations whose states are kept as objects; the others in the cache are kept packed
    (smaller, and out of the garbage collector's walks), unpacked when they come back."""
    verdicts: str = DEFAULT_VERDICTS
    """Durable verdict store: a SQLite file path, a `redis://` URL, or empty for none."""
    shared_states: bool = True
    """With several workers: each writes the states it folds to a file they share, and a
    worker new to a conversation loads its state there instead of folding its whole
    transcript (see `store.shared_states`). Off: each worker folds on its own."""


class LoggingSettings(_Frozen):
    level: str = Field(default="info", pattern="^(debug|info|warning|error)$")
    log_prompts: bool = False
    """Prompt text is never logged unless this is on."""


class AdminToken(_Frozen):
    token: str = Field(min_length=16)
    teams: tuple[str, ...] = ("*",)
    """Teams this token may see and reset; "*" is every team."""


class AdminSettings(_Frozen):
    tokens: tuple[AdminToken, ...] = ()
    """No token, no admin API: it is never on by default."""


class TeamSettings(_Frozen):
    """One team: who it is (its proxy keys), what it runs (policy) and where (upstream)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    keys: tuple[str, ...] = Field(min_length=1)
    """Proxy keys, sent by the agent as `Authorization: Bearer <key>` (or in `server.key_header`)."""
    policy: str = ""
    """Policy TOML, relative to this config file; empty: `repair.policy`."""
    upstream: str = ""
    """Upstream base URL; empty: `upstream.base_url`."""
    upstream_key: str = ""
    """When set, replaces the agent's Authorization upstream; empty: `upstream.api_key`."""
    forward_client_key: bool = False
    """With neither key set: whether the agent's Authorization goes upstream even when it carries
    a proxy key (the old behaviour). Off: a proxy key never goes upstream; an Authorization that
    is no proxy key (the proxy key sent in `server.key_header`) still passes."""
    holdout_percent: float | None = Field(default=None, ge=0, le=100)
    """This team's holdout share; unset: `repair.holdout_percent`."""

    @field_validator("upstream")
    @classmethod
    def _check_upstream(cls, value: str) -> str:
        return check_base_url(value) if value else value


class Settings(_Frozen):
    server: ServerSettings = ServerSettings()
    upstream: UpstreamSettings = UpstreamSettings()
    limits: LimitSettings = LimitSettings()
    repair: RepairSettings = RepairSettings()
    store: StoreSettings = StoreSettings()
    logging: LoggingSettings = LoggingSettings()
    admin: AdminSettings = AdminSettings()
    team: tuple[TeamSettings, ...] = ()
    """`[[team]]` tables. None: one default team serves everyone."""
    source: str = "<defaults>"
    """Where these settings came from (for error messages); not a TOML key."""
    _origins: dict[str, str] = PrivateAttr(default_factory=dict)  # dotted key -> not the file

    def origin(self, key: str) -> str:
        """Where the value of `key` (dotted: `upstream.client_cert`) came from, as an error names
        it: the environment variable (`environment VAR`) or the command line, else the file."""
        return self._origins.get(key, self.source)

    def base_of(self, key: str) -> Path:
        """What a relative path in `key` is relative to: the config file's directory when the file
        set it, else the working directory."""
        return Path(self.source).parent if self.origin(key) == self.source != "<defaults>" else Path()

    @model_validator(mode="after")
    def _unique_teams(self) -> Settings:
        names = [t.name for t in self.team]
        keys = [k for t in self.team for k in t.keys]
        if len(set(names)) != len(names):
            raise ValueError("team names must be unique")
        if len(set(keys)) != len(keys):
            raise ValueError("a proxy key may belong to one team only")
        return self


def load_settings(
    path: str | Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Parse and validate settings; raise `ConfigError` naming every bad key."""
    raw: dict[str, Any] = read_toml(Path(path)) if path else {}
    if "source" in raw:
        raise ConfigError([ConfigProblem(str(path), "source", "not a config key")])
    file = str(path) if path else "<defaults>"
    merged: dict[str, Any] = {}
    origins: dict[tuple[str, str], str] = {}
    """Where a key's value came from when not the file: an environment variable, a flag."""
    for section, value in raw.items():
        merged[section] = dict(value) if isinstance(value, dict) else value
    for var, (section, key) in ENV_OVERRIDES.items():
        if environ is not None and var in environ:
            merged.setdefault(section, {})[key] = environ[var]
            origins[(section, key)] = f"environment {var}"
    for section, values in (overrides or {}).items():
        if isinstance(values, Mapping) and isinstance(merged.get(section, {}), dict):
            merged.setdefault(section, {}).update(values)
            origins.update({(section, key): "command line" for key in values})
        else:
            merged[section] = values
    try:
        settings = Settings.model_validate({**merged, "source": file})
    except ValidationError as exc:
        problems = problems_of(exc, file, merged)
        raise ConfigError([_blamed(p, origins) for p in problems]) from None
    settings._origins.update({f"{section}.{key}": origin for (section, key), origin in origins.items()})
    return settings


def _blamed(problem: ConfigProblem, origins: Mapping[tuple[str, str], str]) -> ConfigProblem:
    """The problem named after where its value came from (a flag, a variable) when not the file."""
    section, _, key = problem.key.partition(".")
    origin = origins.get((section, key.split(".")[0]))
    return ConfigProblem(origin, problem.key, problem.message) if origin else problem
