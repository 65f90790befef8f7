"""The command line: `serve`, `check-config`, `replay`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import structlog
from aiohttp import web

from proxy.app import make_app
from proxy.config import Settings, load_settings
from proxy.demo import run_demo
from proxy.engine import Engine
from proxy.errors import ConfigError
from proxy.fold import ConversationState
from proxy.logs import configure_logging
from proxy.policy import load_policy
from proxy.reload import Reloader
from proxy.replay import ReplayInputError, read_requests, render_text, replay
from proxy.report import fetch, recovery_table
from proxy.statecache import StateCache
from proxy.tenancy import DEFAULT_TEAM, Runtime, build_runtime
from proxy.tokens import EncodingUnavailable, TokenCounter

__all__ = ["build", "build_engine", "main"]


def build_engine(settings: Settings, policy_path: str | None = None) -> Engine:
    """The default team's engine (replay, benchmarks)."""
    return build(settings, policy_path).teams[DEFAULT_TEAM].engine


def build(settings: Settings, policy_path: str | None = None) -> Runtime:
    """Settings to a runtime: every team's policy loaded, one state cache and token counter shared."""
    cache: StateCache[ConversationState] = StateCache(settings.store.state_cache_size, settings.store.state_ttl_seconds)
    return build_runtime(settings, cache, TokenCounter(), policy_path)


def _rebuilder(runtime: Runtime) -> Callable[[Settings], Runtime]:
    """Build later runtimes on the first one's state cache and token counter."""
    engine = next(iter(runtime.teams.values())).engine
    return lambda settings: build_runtime(settings, engine.cache, engine.tokens)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="repair-proxy", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the proxy")
    serve.add_argument("--config", help="config TOML (see config.example.toml)")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--upstream", help="upstream base URL, e.g. http://127.0.0.1:11434/v1")
    serve.add_argument("--no-repair", action="store_true", help="byte-transparent: analyse and change nothing")
    check = sub.add_parser("check-config", help="validate a config file and the policies it names")
    check.add_argument("file")
    check_policy = sub.add_parser("check-policy", help="validate a policy file (and what it extends)")
    check_policy.add_argument("file")
    report = sub.add_parser("report", help="recovery rate of treated vs holdout conversations, from a proxy's /metrics")
    report.add_argument("url", nargs="?", default="http://127.0.0.1:8400/metrics")
    sub.add_parser("demo", help="watch a stuck agent get unstuck: scripted model and agent, the real proxy, no setup")
    rep = sub.add_parser("replay", help="fold chat request bodies offline and show what the proxy would do")
    rep.add_argument("file", help="one request body (JSON) or successive bodies (JSON Lines)")
    rep.add_argument("--policy", help="policy TOML (default: the embedded policy)")
    rep.add_argument("--json", action="store_true", help="one JSON object per request")
    return parser


def _serve(args: argparse.Namespace, environ: dict[str, str]) -> int:
    overrides: dict[str, dict[str, Any]] = {}
    if args.host:
        overrides.setdefault("server", {})["host"] = args.host
    if args.port is not None:
        overrides.setdefault("server", {})["port"] = args.port
    if args.upstream:
        overrides.setdefault("upstream", {})["base_url"] = args.upstream
    if args.no_repair:
        overrides.setdefault("repair", {})["enabled"] = False
    settings = load_settings(args.config, environ=environ, overrides=overrides)
    configure_logging(settings.logging.level)
    runtime = build(settings)
    app = make_app(runtime)
    reloader = Reloader(args.config, environ, overrides, _rebuilder(runtime))
    app.on_startup.append(reloader.install)
    structlog.get_logger("repair_proxy").info(
        "listening",
        host=settings.server.host,
        port=settings.server.port,
        upstream=settings.upstream.base_url,
        repair=settings.repair.enabled,
    )
    web.run_app(
        app,
        host=settings.server.host,
        port=settings.server.port,
        shutdown_timeout=settings.server.drain_timeout,
        handler_cancellation=True,
        access_log=None,
        print=None,
    )
    return 0


def _check_config(args: argparse.Namespace) -> int:
    runtime = build(load_settings(args.file))
    teams = ", ".join(f"{t.name} -> {t.upstream} ({t.engine.policy.source})" for t in runtime.teams.values())
    print(f"{args.file}: ok; teams: {teams}")
    return 0


def _check_policy(args: argparse.Namespace) -> int:
    policy = load_policy(args.file)
    print(f"{args.file}: ok (policy {policy.name!r})")
    return 0


def _replay(args: argparse.Namespace) -> int:
    settings = Settings()
    engine = build_engine(settings, args.policy or "")
    for record in replay(engine, read_requests(Path(args.file))):
        print(orjson.dumps(record).decode() if args.json else render_text(record))
    return 0


def main(argv: Sequence[str] | None = None, environ: dict[str, str] | None = None) -> int:
    args = _parser().parse_args(argv)
    env = dict(environ) if environ is not None else dict(os.environ)
    try:
        if args.command == "serve":
            return _serve(args, env)
        if args.command == "check-config":
            return _check_config(args)
        if args.command == "check-policy":
            return _check_policy(args)
        if args.command == "report":
            print(recovery_table(fetch(args.url)))
            return 0
        if args.command == "demo":
            configure_logging("warning")
            run_demo(build)
            return 0
        return _replay(args)
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
    except (EncodingUnavailable, ReplayInputError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
