"""Teams: which team a request belongs to, and each team's engine and upstream.

A team is chosen by its proxy key, sent as `Authorization: Bearer <key>` or in the
`server.key_header` header. With no `[[team]]` configured, one default team serves everyone.
State, verdicts, logs and metrics are keyed by team, so they never cross teams.

The runtime owns what every team's engine shares (the state cache and the token counter);
a reload builds the next runtime on the same ones, so conversation state carries over.
"""

from __future__ import annotations

import hashlib
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from yarl import URL

from proxy.dialects import SpanMemory
from proxy.engine.core import Engine
from proxy.engine.state.cache import Codec, StateCache, Tier
from proxy.engine.state.codec import pack, unpack
from proxy.engine.state.conversation import ConversationState, approx_bytes
from proxy.engine.text.tokens import TokenCounter
from proxy.http.runtime.footprint import Footprint, Shares
from proxy.http.runtime.tls import upstream_tls
from proxy.settings.config import Settings, TeamSettings
from proxy.settings.policy import is_preset_name, load_policy
from proxy.settings.problems import ConfigError, ConfigProblem, key_of

__all__ = [
    "DEFAULT_TEAM",
    "UPSTREAM_SETTINGS",
    "Runtime",
    "Shared",
    "Team",
    "Timeouts",
    "UpstreamNamed",
    "build_runtime",
]

DEFAULT_TEAM = "default"
UPSTREAM_SETTINGS = "--upstream, REPAIR_PROXY_UPSTREAM or upstream.base_url"
"""Where the upstream is set, highest precedence first."""


@dataclass(frozen=True, slots=True)
class UpstreamNamed:
    """How the proxy's own messages (a 502, `/readyz`, the warning at start) name a team's upstream:
    `name` says which it is, `setting` where it was set and how to choose another.

    Without teams, the one who runs the proxy runs the agent: the name is its address. With teams,
    an agent of one team may sit outside the network the upstream is in: the name is the team's,
    and the address is in the proxy's log (`upstream_error`) and `/readyz`."""

    name: str = "the upstream"
    setting: str = ""


def upstream_named(settings: Settings, team: TeamSettings | None = None) -> UpstreamNamed:
    upstream = settings.upstream
    if team is not None:
        where = f"team {team.name}'s upstream in {settings.source}" if team.upstream else "upstream.base_url"
        return UpstreamNamed(f"team {team.name}'s upstream", f"It is {where}; its address is in the proxy's log.")
    address = str(URL(upstream.base_url).with_user(None))
    if "base_url" not in upstream.model_fields_set:
        return UpstreamNamed(f"the upstream {address}", f"It is the default; set yours with {UPSTREAM_SETTINGS}.")
    origin = settings.origin("upstream.base_url")
    source = {"command line": "--upstream"}.get(origin, origin.removeprefix("environment "))
    if source == settings.source:
        source = f"upstream.base_url in {source}"
    return UpstreamNamed(f"the upstream {address}", f"It was set by {source}; set it with {UPSTREAM_SETTINGS}.")


@dataclass(frozen=True, slots=True)
class Team:
    name: str
    engine: Engine
    upstream: str
    upstream_key: str
    """Replaces the agent's Authorization upstream when set (the team's own, else `upstream.api_key`)."""
    holdout_percent: float = 0.0
    forward_client_key: bool = False
    """Without an upstream key: the agent's Authorization goes upstream even when it is a proxy key."""
    named: UpstreamNamed = UpstreamNamed()
    """How the proxy's own messages name its upstream."""

    def holdout(self, conversation: str) -> bool:
        """Whether this conversation is in the holdout arm (the same answer on every replica)."""
        if self.holdout_percent <= 0:
            return False
        bucket = int(hashlib.sha256(conversation.encode()).hexdigest()[:8], 16) % 10_000
        return bucket < self.holdout_percent * 100


@dataclass(frozen=True, slots=True)
class Shared:
    """What outlives a reload: conversation states and the token counter."""

    cache: StateCache[ConversationState]
    tokens: TokenCounter
    spans: SpanMemory
    """Where each conversation's last rewrite found its messages (see `dialects.splice`)."""
    footprint: Footprint
    """The byte bound's shares: the tokenizer, working memory, then the two caches."""

    @classmethod
    def of(
        cls,
        settings: Settings,
        tier: Tier[ConversationState] | None = None,
        release: Callable[[], object] | None = None,
    ) -> Shared:
        """`tier`: the worker set's shared second level of the state cache (`store.shared_states`);
        `release`: gives the allocator's free memory back to the system (see `Footprint`)."""
        store = settings.store
        shares = Shares.of(store.state_cache_bytes, working=0)
        cache = StateCache(
            store.state_cache_size,
            store.state_ttl_seconds,
            max_bytes=shares.states,
            sizer=approx_bytes,
            tier=tier,
            codec=Codec(pack, unpack),
            live=store.live_states,
        )
        spans = SpanMemory(store.state_cache_size, max_bytes=shares.spans)
        footprint = Footprint(store.state_cache_bytes, cache, spans, release)
        return cls(cache, TokenCounter(), spans, footprint)


@dataclass(frozen=True, slots=True)
class Timeouts:
    """The upstream's timeouts: to connect, to its first byte, between its chunks."""

    connect: float
    first_byte: float
    idle: float

    @classmethod
    def of(cls, settings: Settings) -> Timeouts:
        upstream = settings.upstream
        return cls(upstream.connect_timeout, upstream.first_byte_timeout, upstream.idle_timeout)


@dataclass(frozen=True, slots=True)
class Runtime:
    """Everything a request needs that a reload may replace: settings and teams."""

    settings: Settings
    teams: Mapping[str, Team]
    by_key: Mapping[str, str]
    shared: Shared
    tls: ssl.SSLContext
    """For https upstreams: trusted CAs and the client certificate (`proxy.http.runtime.tls.upstream_tls`)."""
    timeouts: Timeouts

    @property
    def open(self) -> bool:
        """No teams configured: everyone is the default team."""
        return not self.by_key

    def team_for(self, headers: Mapping[str, str]) -> tuple[Team | None, bool]:
        """The request's team (None when teams are configured and no known key was sent), and whether
        the agent's own Authorization may go upstream as sent (when the team has no upstream key to
        put there instead): a proxy key never does, unless the team opts in (`forward_client_key`);
        any other value does (without teams there are no proxy keys)."""
        if not self.by_key:  # no teams configured: everyone is the default team
            return self.teams[DEFAULT_TEAM], True
        authorization = headers.get("Authorization", "")
        candidates = [headers.get(self.settings.server.key_header, "")]
        if authorization[:7].lower() == "bearer ":
            candidates.append(authorization[7:].strip())
        for key in candidates:
            name = self.by_key.get(key) if key else None
            if name is not None:
                team = self.teams[name]
                value = authorization.strip()
                token = value[7:].strip() if value[:7].lower() == "bearer " else value
                return team, team.forward_client_key or token not in self.by_key
        return None, False

    def rebuild(self, settings: Settings) -> Runtime:
        """The runtime for new settings, on this one's state cache and token counter."""
        return build_runtime(settings, self.shared)


def _policy_path(settings: Settings, path: str, key: str) -> str:
    """A policy path relative to the config file (or to the working directory, when a variable
    set it: `Settings.base_of`); a preset name as it is."""
    if not path or is_preset_name(path) or Path(path).is_absolute():
        return path
    return str(settings.base_of(key) / path)


def _named(exc: ConfigError, settings: Settings, key: str, path: str) -> list[ConfigProblem]:
    """A policy that cannot be read at all is the config key's problem (which file named it,
    and where); a policy with bad keys names its own file."""
    return [
        ConfigProblem(settings.origin(key), key, f"{path}: {p.message}") if p.key in ("<file>", "<name>") else p
        for p in exc.problems
    ]


def build_runtime(settings: Settings, shared: Shared | None = None) -> Runtime:
    """Load every team's policy; raise `ConfigError` naming the file and key of every problem."""
    shared = shared or Shared.of(settings)
    default_policy_path = _policy_path(settings, settings.repair.policy, "repair.policy")
    engines: dict[str, Engine] = {}

    def engine(path: str, key: str) -> Engine:
        """One engine per policy file; teams that share a policy share its compiled rules."""
        if path not in engines:
            try:
                engines[path] = Engine(load_policy(path), shared.cache, shared.tokens)
            except ConfigError as exc:
                raise ConfigError(_named(exc, settings, key, path)) from None
        return engines[path]

    if not settings.team:
        team = Team(
            DEFAULT_TEAM,
            engine(default_policy_path, "repair.policy"),
            settings.upstream.base_url,
            settings.upstream.api_key,
            settings.repair.holdout_percent,
            named=upstream_named(settings),
        )
        return Runtime(settings, {DEFAULT_TEAM: team}, {}, shared, upstream_tls(settings), Timeouts.of(settings))
    teams: dict[str, Team] = {}
    problems: list[ConfigProblem] = []
    for index, entry in enumerate(settings.team):
        key = key_of(("team", index, "policy"), {"team": [{"name": t.name} for t in settings.team]})
        path = _policy_path(settings, entry.policy, key) if entry.policy else default_policy_path
        try:
            team_engine = engine(path, key if entry.policy else "repair.policy")
        except ConfigError as exc:
            problems.extend(exc.problems)
            continue
        teams[entry.name] = Team(
            entry.name,
            team_engine,
            entry.upstream or settings.upstream.base_url,
            entry.upstream_key or settings.upstream.api_key,
            settings.repair.holdout_percent if entry.holdout_percent is None else entry.holdout_percent,
            entry.forward_client_key,
            upstream_named(settings, entry),
        )
    if problems:
        raise ConfigError(problems)
    by_key = {key: entry.name for entry in settings.team for key in entry.keys}
    return Runtime(settings, teams, by_key, shared, upstream_tls(settings), Timeouts.of(settings))
