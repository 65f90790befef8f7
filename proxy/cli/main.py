"""The command line: `serve`, `check-config`, `check-policy`, `replay`, `report`, `demo`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog
from aiohttp import web

from proxy.cli.demo import run_demo
from proxy.cli.replay import ReplayInputError, replay_file
from proxy.cli.report import fetch, recovery_table
from proxy.engine.rules import Rules
from proxy.engine.tokens import EncodingUnavailable
from proxy.http.app import make_app, server_options
from proxy.http.logs import configure_logging
from proxy.http.reload import Reloader
from proxy.http.tenancy import build_runtime
from proxy.settings.config import load_settings
from proxy.settings.policy import load_policy
from proxy.settings.problems import ConfigError

__all__ = ["main"]


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
    app = make_app(build_runtime(settings), Reloader(args.config, environ, overrides))
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
        **server_options(settings),
        access_log=None,
        print=None,
    )
    return 0


def _check_config(args: argparse.Namespace) -> int:
    runtime = build_runtime(load_settings(args.file))
    teams = ", ".join(f"{t.name} -> {t.upstream} ({t.engine.policy.source})" for t in runtime.teams.values())
    print(f"{args.file}: ok; teams: {teams}")
    return 0


def _check_policy(args: argparse.Namespace) -> int:
    policy = Rules.of(load_policy(args.file)).policy  # pattern names are checked against the detectors
    print(f"{args.file}: ok (policy {policy.name!r})")
    return 0


def _replay(args: argparse.Namespace) -> int:
    for line in replay_file(Path(args.file), args.policy or "", as_json=args.json):
        print(line)
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
            run_demo()
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
