"""The repair policy: a TOML file parsed once into frozen typed objects.

Knobs shared by several patterns have a named default here, exported for tests and
documented in `proxy/defaults/default.toml`, the embedded default policy. Each pattern's own
settings (its ladder and any options of its own) are a `[patterns.<name>]` table, kept here
as written: the pattern's detector file declares their defaults and their types (a `Ladder`
subclass), and the engine validates the table against it when it compiles the policy,
refusing a pattern it does not have (`repair-proxy patterns` lists them).
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, model_validator

from proxy.settings.kinds import CallKind, FutileAgain, Placement
from proxy.settings.ladder import Frozen, Ladder, Rung
from proxy.settings.problems import ConfigError, ConfigProblem, problems_of, read_toml

__all__ = [
    "DEFAULT_POLL_TOOLS",
    "DEFAULT_VOLATILE_KEYS",
    "MAX_ACTION_ATTEMPTS",
    "MAX_EXTRA_GENERATIONS",
    "MAX_FINISH_ATTEMPTS",
    "MAX_INJECTED_TOKENS",
    "MAX_VERIFY_ATTEMPTS",
    "Classification",
    "Ladder",
    "Loops",
    "Memory",
    "NameHints",
    "Policy",
    "Repair",
    "Reply",
    "Rung",
    "ShellPatterns",
    "ToolRule",
    "bundled_presets",
    "default_policy",
    "load_policy",
    "policy_from_mapping",
]

DEFAULT_POLL_TOOLS = (
    "wait",
    "sleep",
    "poll",
    "check_status",
    "get_status",
    "job_status",
    "status",
    "BashOutput",
    "get_job",
)
"""Polling tools by name; shell commands classified `poll` (sleep, watch, ps...) count too."""
DEFAULT_VOLATILE_KEYS = frozenset({"id", "request_id", "nonce", "timestamp", "trace_id", "tool_call_id", "call_id"})
"""Argument keys whose values change on every call without changing what the call does."""
MAX_VERIFY_ATTEMPTS = 2
"""Done-gate: how many times a premature stop is sent back before it passes as unverified."""
MAX_INJECTED_TOKENS = 200
"""Token budget (cl100k) of one injected instruction."""
MAX_ACTION_ATTEMPTS = 2
"""Action gate: how many times a reply that does not act mid-task is asked again."""
MAX_FINISH_ATTEMPTS = 2
MAX_EXTRA_GENERATIONS = 1
"""What one agent request may cost in extra generations, all gates together."""
"""Finish gate: how many times finishing on a live failure is sent back before it passes as `complete_failing`."""


class ToolRule(Frozen):
    """How to classify calls to the named tools."""

    names: tuple[str, ...] = Field(min_length=1)
    kind: CallKind | None = None
    """A fixed kind for every call."""
    arg: str | None = None
    """An argument whose value picks the kind through `values`."""
    values: dict[str, CallKind] = Field(default_factory=dict)
    command_arg: str | None = None
    """This tool runs shell commands held in this argument: classify by `shell` patterns."""


class ShellPatterns(Frozen):
    """Regular expressions over one shell command segment (split on && ; || |)."""

    verify: tuple[str, ...] = ()
    edit: tuple[str, ...] = ()
    read: tuple[str, ...] = ()
    search: tuple[str, ...] = ()
    poll: tuple[str, ...] = ()
    finish: tuple[str, ...] = ()
    """Commands that end the run (SWE-agent's `submit`, mini-swe-agent's final echo)."""
    other: tuple[str, ...] = ()
    """Programs that do none of these whatever their arguments name: installers and lookups
    (`pip install pytest` installs the runner and runs no test; `which pytest` finds it)."""


class NameHints(Frozen):
    """Substrings of unknown tool names, lower-cased, that suggest a kind."""

    verify: tuple[str, ...] = ()
    edit: tuple[str, ...] = ()
    read: tuple[str, ...] = ()
    search: tuple[str, ...] = ()
    poll: tuple[str, ...] = ()
    finish: tuple[str, ...] = ()


class Classification(Frozen):
    """How calls are told apart: edits, checks, reads, searches, polls."""

    tools: tuple[ToolRule, ...] = ()
    command_args: tuple[str, ...] = ("command", "cmd")
    """Any unlisted tool with one of these string arguments is treated as a shell."""
    shell: ShellPatterns = ShellPatterns()
    name_hints: NameHints = NameHints()


class Repair(Frozen):
    """The current-failure model, the done-gate and how instructions are placed."""

    failure_model: bool = True
    """The current-failure model; off, the legacy `repeated_error` trip runs instead."""
    post_edit_reverify: bool = True
    done_gate: bool = True
    max_verify_attempts: int = Field(default=MAX_VERIFY_ATTEMPTS, ge=0)
    placement: Placement = Placement.SYSTEM
    max_injected_tokens: int = Field(default=MAX_INJECTED_TOKENS, ge=16)
    verify_tool: str = ""
    """Tool to force for a re-verify; empty: the tool that ran the failing check."""
    handback_command: str = ""  # a command ending the agent's run: see default.toml


_MOVED_TO_PATTERNS = ("repeat_output_ring", "read_share")
"""`[loops]` keys that now belong to the one pattern that uses them (its own table)."""


class Loops(Frozen):
    """What the loop guards share: which tools poll, which argument keys never matter. A knob of
    one pattern is in that pattern's table (`[patterns.<name>]`)."""

    poll_tools: tuple[str, ...] = DEFAULT_POLL_TOOLS
    volatile_keys: tuple[str, ...] = tuple(sorted(DEFAULT_VOLATILE_KEYS))

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in _MOVED_TO_PATTERNS:
                if key in data:
                    raise ValueError(
                        f"`{key}` is now an option of the pattern that uses it, in its own [patterns.<name>] "
                        "table: `repair-proxy patterns` prints every pattern's options"
                    )
        return data


class Reply(Frozen):
    """What the proxy does with the model's reply (see `proxy/engine/plan/reply.py`)."""

    salvage: bool = True
    """A tool call the model wrote as text becomes a real call in the request's dialect."""
    action_gate: bool = True
    """Empty or idle replies mid-task, and any reply meant as a call that is none, are asked again."""
    max_action_attempts: int = Field(default=MAX_ACTION_ATTEMPTS, ge=0)
    constrain_calls: bool = True
    """Our requests for a call (gate retries, `force`) also ask for it as JSON (structured output)."""
    finish_gate: bool = True
    """Finishing (a finish tool, or a final answer) while the failing check still fails is asked again."""
    max_finish_attempts: int = Field(default=MAX_FINISH_ATTEMPTS, ge=0)
    block: bool = True
    """The block rung: a proposed call a pattern says cannot help is not passed on, and the model
    is asked again (each pattern's `block` option says when it may refuse)."""
    futile_again: FutileAgain = FutileAgain.HANDBACK
    """Asked again by a gate, the model proposes a call the block rung refuses, made in vain twice
    before: the hand-back, or the reply as its gate gives up."""
    max_extra_generations: int = Field(default=MAX_EXTRA_GENERATIONS, ge=0)
    """Extra generations one agent request may cost, every gate's retries together (block,
    action, finish, done); past it the reply passes as its gate gives up."""


class Memory(Frozen):
    """Cross-run memory."""

    enabled: bool = True
    """Cross-run memory: a stalled run's verdict seeds the next run of the same task."""


class Policy(Frozen):
    """One policy file laid over what it extends."""

    name: str = "default"
    repair: Repair = Repair()
    patterns: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Each pattern's table by name (`[patterns.<name>]`), as written: laid over the defaults its
    detector declares and validated when the engine compiles the policy. A pattern left out
    keeps its defaults."""
    classify: Classification = Classification()
    loops: Loops = Loops()
    memory: Memory = Memory()
    reply: Reply = Reply()
    source: str = "<embedded>"


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` laid on `base`: tables merge key by key, everything else replaces."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


BUNDLED_DEFAULT = "default"
"""The embedded default policy; every policy extends it unless it names another parent."""


def bundled_presets() -> list[str]:
    """Names `extends` accepts without a path: the default and the agent presets."""
    folder = resources.files("proxy").joinpath("defaults")
    return sorted(item.name.removesuffix(".toml") for item in folder.iterdir() if item.name.endswith(".toml"))


def _read_bundled(name: str, source: str) -> tuple[dict[str, Any], str]:
    if name not in bundled_presets():
        known = ", ".join(bundled_presets())
        key = "extends" if source != "<policy>" else "<name>"
        raise ConfigError([ConfigProblem(source, key, f"no preset {name!r} (bundled: {known}); or give a .toml path")])
    text = resources.files("proxy").joinpath(f"defaults/{name}.toml").read_text(encoding="utf-8")
    return tomllib.loads(text), f"<bundled>/{name}.toml"


def _resolve(raw: dict[str, Any], source: str, seen: frozenset[str]) -> dict[str, Any]:
    """`raw` laid over its parent chain (`extends`, a preset name or a path relative to it)."""
    raw = dict(raw)
    parent = raw.pop("extends", None if source == f"<bundled>/{BUNDLED_DEFAULT}.toml" else BUNDLED_DEFAULT)
    if parent is None:
        return raw
    if not isinstance(parent, str) or not parent:
        raise ConfigError([ConfigProblem(source, "extends", "must be a preset name or a path to a .toml file")])
    if parent.endswith(".toml") or "/" in parent:
        base_dir = Path(source).parent if not source.startswith("<") else Path.cwd()
        file = (base_dir / parent).resolve()
        parent_raw, parent_source = read_toml(file), str(file)
    else:
        parent_raw, parent_source = _read_bundled(parent, source)
    if parent_source in seen:
        raise ConfigError([ConfigProblem(source, "extends", f"extends itself through {parent_source}")])
    return _merge(_resolve(parent_raw, parent_source, seen | {parent_source}), raw)


def parse_policy(raw: dict[str, Any], source: str) -> Policy:
    """Validate `raw` laid over its parents; errors name `source` and the key."""
    if "source" in raw:
        raise ConfigError([ConfigProblem(source, "source", "not a policy key")])
    resolved = _resolve(raw, source, frozenset({source}))
    try:
        return Policy.model_validate({**resolved, "source": source})
    except ValidationError as exc:
        raise ConfigError(problems_of(exc, source)) from None


def policy_from_mapping(raw: dict[str, Any], source: str) -> Policy:
    """A policy given as a mapping (already parsed TOML), laid over the embedded default."""
    return parse_policy(raw, source)


def default_policy() -> Policy:
    """The embedded default policy (`proxy/defaults/default.toml`)."""
    raw, source = _read_bundled(BUNDLED_DEFAULT, "<default>")
    return parse_policy(raw, source)


def is_preset_name(value: str) -> bool:
    """A bundled preset's name (`openhands`), not a path: no slash and no `.toml`."""
    return bool(value) and "/" not in value and not value.endswith(".toml")


def load_policy(path: str | Path | None) -> Policy:
    """Read a policy file laid over what it extends (the default unless it says otherwise), or
    a bundled preset by name; `ConfigError` names the file and every bad key."""
    if not path:
        return default_policy()
    if isinstance(path, str) and is_preset_name(path):
        raw, source = _read_bundled(path, "<policy>")
        return parse_policy(raw, source)
    file = Path(path)
    return parse_policy(read_toml(file), str(file))
