"""The command line: `serve`, `check-config`, `check-policy`, `patterns`, `replay`, `report`, `demo`."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from proxy.cli.supervisor import supervise
from proxy.engine.plan.rules import Rules
from proxy.engine.text.tokens import EncodingUnavailable
from proxy.http.observe.logs import configure_logging
from proxy.http.observe.traces_asked import traces_asked
from proxy.http.runtime.rundir import Worker
from proxy.http.runtime.tenancy import Shared, build_runtime
from proxy.settings.config import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    DEFAULT_UPSTREAM,
    ENV_OVERRIDES,
    MAX_AUTO_WORKERS,
    Settings,
    load_settings,
)
from proxy.settings.policy import load_policy
from proxy.settings.problems import ConfigError
from proxy.store import StoreUnusable, check_store

# What serves (aiohttp, the app, metrics) and the other commands' own modules are imported
# where they are used: a supervisor of workers, which serves nothing, never loads them.

__all__ = ["DESCRIPTION", "main"]

DESCRIPTION = (
    "A transparent proxy between an LLM coding agent and its OpenAI-compatible model server: it reads the "
    "tool calls and results in each request and, when the agent is stuck, adds one short instruction. "
    "Start with `repair-proxy serve` and point the agent at OPENAI_BASE_URL=http://127.0.0.1:8400/v1, "
    "or watch `repair-proxy demo`."
)


def _version() -> str:
    """The installed distribution's version (what `pip install` put here)."""
    try:
        return metadata.version("repair-proxy")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="repair-proxy", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"repair-proxy {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser(
        "serve",
        help="run the proxy",
        description="Run the proxy. Each setting: this flag, else its REPAIR_PROXY_* variable, else the config "
        "file, else the default shown. The repair policy: REPAIR_PROXY_POLICY or repair.policy, a preset's name "
        "(openhands, codex, ...) or a TOML file (default: the embedded one).",
    )
    serve.add_argument("--config", help="config TOML (default: none, the embedded defaults; see config.example.toml)")
    serve.add_argument("--host", help=f"listen address (default: {DEFAULT_HOST}; REPAIR_PROXY_HOST, server.host)")
    serve.add_argument(
        "--port", type=int, help=f"listen port (default: {DEFAULT_PORT}; REPAIR_PROXY_PORT, server.port)"
    )
    serve.add_argument(
        "--upstream",
        help=f"the model server's OpenAI-compatible base URL (default: {DEFAULT_UPSTREAM}, Ollama on this machine; "
        "REPAIR_PROXY_UPSTREAM, upstream.base_url)",
    )
    serve.add_argument(
        "--no-repair",
        action="store_true",
        help="byte-transparent: analyse and change nothing (default: repair on; REPAIR_PROXY_REPAIR, repair.enabled)",
    )
    serve.add_argument(
        "--workers",
        type=int,
        help=f"processes on the port (default: 0, one per core, at most {MAX_AUTO_WORKERS}; REPAIR_PROXY_WORKERS, "
        "server.workers)",
    )
    serve.add_argument("--worker", type=int, help=argparse.SUPPRESS)  # set by the supervisor
    serve.add_argument("--run-dir", type=Path, help=argparse.SUPPRESS)
    serve.add_argument("--supervisor", type=int, help=argparse.SUPPRESS)
    check = sub.add_parser(
        "check-config",
        help="validate the settings serve would run on: a config file (or the embedded defaults), "
        "the REPAIR_PROXY_* environment over it, and the policies they name",
    )
    check.add_argument("file", nargs="?", help="config TOML (default: none, the embedded defaults)")
    check_policy = sub.add_parser("check-policy", help="validate a policy file (and what it extends)")
    check_policy.add_argument("file")
    sub.add_parser("patterns", help="every pattern's defaults (ladder and options), as policy TOML")
    report = sub.add_parser("report", help="recovery rate of treated vs holdout conversations, from a proxy's /metrics")
    report.add_argument("url", nargs="?", default="http://127.0.0.1:8400/metrics")
    demo_said = (
        "a scripted agent stuck on one failing test, through the real proxy (no setup): what it folds, "
        "the instructions it places, and the hand-back that ends the run"
    )
    sub.add_parser("demo", help=demo_said, description=f"Run {demo_said}.")
    rep = sub.add_parser("replay", help="fold chat request bodies offline and show what the proxy would do")
    rep.add_argument("file", help="one request body (JSON) or successive bodies (JSON Lines)")
    rep.add_argument("--policy", help="policy TOML (default: the embedded policy)")
    rep.add_argument("--json", action="store_true", help="one JSON object per request")
    return parser


def _serve(args: argparse.Namespace, environ: dict[str, str], argv: Sequence[str]) -> int:
    # SIGHUP waits until something can take it: the supervisor's handler, or a worker's reload hook
    # (`Reloader.install` lets it through). Until then its default action would kill the process:
    # a reload asked while a worker starts would be a dead worker (seen under load, two workers).
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})
    worker = Worker(args.worker, args.run_dir, args.supervisor)
    worker.stop_with_supervisor()  # first thing: a supervisor killed from now on stops this worker
    if worker.orphaned():  # ... and one killed before now
        print(
            f"error: worker {args.worker}: its supervisor (pid {args.supervisor}) is gone; not starting",
            file=sys.stderr,
        )
        return 1
    overrides = _overrides(args)
    settings = _settings(args.config, environ, overrides)
    configure_logging(settings.logging.level)
    count = settings.server.worker_count()
    check_store(settings.store.verdicts)  # an unusable store stops here, before anything listens
    if args.worker is None:
        traces_asked(environ)  # traces asked for without the SDK stop here, said once, not once per worker
    if args.worker is None and count > 1:
        build_runtime(settings)  # policy errors stop here, said once, before any worker starts
        return supervise(argv, settings, count)
    from proxy.cli.serving import run_worker  # noqa: PLC0415 - a worker's, see above
    from proxy.http.serving.app import make_app  # noqa: PLC0415
    from proxy.http.serving.reload import Reloader  # noqa: PLC0415

    runtime = build_runtime(settings, _shared(settings, worker))
    app = make_app(runtime, Reloader(args.config, environ, overrides), worker, probe_at_start=True)
    run_worker(app, settings, worker)
    return 0


def _settings(config: str | None, environ: Mapping[str, str], overrides: Mapping[str, Any] | None = None) -> Settings:
    """The settings `serve` runs on and `check-config` checks, read one way for both: the config
    file (none: the embedded defaults), the environment's `REPAIR_PROXY_*` variables over it
    (`ENV_OVERRIDES`), the command line's flags over both."""
    return load_settings(config, environ=environ, overrides=overrides)


def _overrides(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """What `serve`'s flags set."""
    overrides: dict[str, dict[str, Any]] = {}
    if args.host:
        overrides.setdefault("server", {})["host"] = args.host
    if args.port is not None:
        overrides.setdefault("server", {})["port"] = args.port
    if args.workers is not None:
        overrides.setdefault("server", {})["workers"] = args.workers
    if args.upstream:
        overrides.setdefault("upstream", {})["base_url"] = args.upstream
    if args.no_repair:
        overrides.setdefault("repair", {})["enabled"] = False
    return overrides


def _shared(settings: Settings, worker: Worker) -> Shared:
    """What this process's teams share; a worker of a set also shares conversation states with
    its siblings, through a file in the set's run directory."""
    from proxy.cli.serving import release_free_memory  # noqa: PLC0415 - a worker's

    if worker.states is None or not settings.store.shared_states:
        return Shared.of(settings, release=release_free_memory)
    from proxy.store.shared_states import SHARED_STATES_SHARE, SharedStates  # noqa: PLC0415 - a worker's

    store = settings.store
    bound = store.state_cache_bytes // SHARED_STATES_SHARE
    return Shared.of(settings, SharedStates(worker.states, bound, store.state_ttl_seconds), release_free_memory)


def _check_config(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """The settings `serve` would run on, checked (`_settings`: the environment included), and
    what they come to: each team's upstream and policy, and the variables that took part."""
    runtime = build_runtime(_settings(args.file, environ))
    teams = ", ".join(f"{t.name} -> {t.upstream} ({t.engine.policy.source})" for t in runtime.teams.values())
    used = [var for var in ENV_OVERRIDES if var in environ]
    said = f"; from the environment: {', '.join(used)}" if used else ""
    print(f"{args.file or '<defaults>'}: ok; teams: {teams}{said}")
    return 0


def _check_policy(args: argparse.Namespace) -> int:
    policy = Rules.of(load_policy(args.file)).policy  # pattern tables are checked against the detectors
    print(f"{args.file}: ok (policy {policy.name!r})")
    return 0


def _patterns() -> int:
    from proxy.cli.patterns import patterns_toml  # noqa: PLC0415 - this command's own

    print(patterns_toml(), end="")
    return 0


def _replay(args: argparse.Namespace) -> int:
    from proxy.cli.replay import ReplayInputError, replay_file  # noqa: PLC0415 - this command's own

    try:
        for line in replay_file(Path(args.file), args.policy or "", as_json=args.json):
            print(line)
    except ReplayInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _report(args: argparse.Namespace) -> int:
    from proxy.cli.report import ReportUnavailable, fetch, recovery_table  # noqa: PLC0415 - this command's own

    try:
        print(recovery_table(fetch(args.url), args.url))
    except ReportUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _demo() -> int:
    from proxy.cli.demo import run_demo  # noqa: PLC0415 - this command's own

    configure_logging("warning")
    run_demo()
    return 0


def main(argv: Sequence[str] | None = None, environ: dict[str, str] | None = None) -> int:
    given = list(argv) if argv is not None else sys.argv[1:]
    args = _parser().parse_args(given)
    env = dict(environ) if environ is not None else dict(os.environ)
    try:
        if args.command == "serve":
            return _serve(args, env, given[given.index("serve") + 1 :])
        if args.command == "check-config":
            return _check_config(args, env)
        if args.command == "check-policy":
            return _check_policy(args)
        if args.command == "patterns":
            return _patterns()
        if args.command == "report":
            return _report(args)
        if args.command == "demo":
            return _demo()
        return _replay(args)
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
    except (EncodingUnavailable, OSError, StoreUnusable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
