"""Does the order of a pinned edit's arguments decide whether a small model changes anything?

At a recovery-bench stuck point (`bench/repos/<repo>`, OpenHands style: the test failed three
times unchanged, the test and the code viewed), the proxy refuses the re-run and re-asks for an
edit whose `old_str` its call schema holds to the lines it has seen (`plan/callschema.py`, rule
4). The re-ask is sent K times (seeds 1..K) to a running llama-server, with the schema's
properties in two orders: the pinned `old_str` before `new_str` (the declared order), and the
free `new_str` first. Each reply is counted as an edit that changes nothing (`new_str` equal to
`old_str`), one that applies (and whether the tests then pass, in a fresh copy), or other.

Run (a model server up: python scripts/real_model.py serve qwen --port 8080):
    .venv/bin/python bench/pin_order.py [--repos stack,temps] [--k 8] [--base-url http://127.0.0.1:8080/v1]
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import orjson
from tiny_agent import OPENHANDS_TOOLS, Tools, stuck_start, tests_pass

from proxy.dialects import plan_offline
from proxy.dialects.chat import CHAT
from proxy.engine.core import Engine
from proxy.engine.plan.reply import Gate, ReplyView, judge
from proxy.settings.policy import load_policy

REPOS = Path(__file__).resolve().parent / "repos"


def _copy(repo: str) -> Path:
    root = Path(tempfile.mkdtemp()) / repo
    shutil.copytree(REPOS / repo, root, ignore=shutil.ignore_patterns("stuck.json", "__pycache__"))
    return root


def _stuck_point(repo: str) -> tuple[dict[str, Any], list[list[str]]]:
    """The re-ask the proxy sends at the stuck point, read through the engine as the proxy reads it."""
    edits = json.loads((REPOS / repo / "stuck.json").read_text())["edits"]
    root = _copy(repo)
    messages = stuck_start(root, "openhands", edits)
    tools = Tools(root, "openhands")
    for n, path in enumerate([sorted((root / "tests").glob("test_*.py"))[0], sorted(root.glob("*.py"))[0]]):
        args = {"command": "view", "path": str(path)}
        call = {"id": f"call_v{n}", "type": "function", "function": {"name": "str_replace_editor", "arguments": json.dumps(args)}}  # fmt: skip
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_v{n}", "content": tools.call("str_replace_editor", args)[0]},
        ]
    body = {"model": "local", "messages": messages, "tools": OPENHANDS_TOOLS, "temperature": 0.7, "max_tokens": 256}
    planned = plan_offline(Engine.of(load_policy(None)), CHAT, orjson.dumps(body), {})
    if planned is None:
        raise SystemExit("the stuck point could not be read")
    rerun = judge(ReplyView("", ("execute_bash",), ('{"command": "python -m pytest"}',)), planned.decision.reply)
    if rerun.refusal is None:
        raise SystemExit("the re-run was not refused at the stuck point")
    return orjson.loads(planned.retry(Gate.BLOCK, 1, refusal=rerun.refusal)), edits


def _ordered(retry: dict[str, Any], pinned_first: bool) -> dict[str, Any]:
    body = copy.deepcopy(retry)
    schema = body["response_format"]["json_schema"]["schema"]["properties"]["arguments"]
    props = schema["properties"]
    pinned = {k: v for k, v in props.items() if "enum" in v}
    free = {k: v for k, v in props.items() if k not in pinned}
    schema["properties"] = {**pinned, **free} if pinned_first else {**free, **pinned}
    return body


def _outcome(reply: dict[str, Any], repo: str, edits: list[list[str]]) -> str:
    try:
        arguments = json.loads(reply.get("content") or "")["arguments"]
    except (ValueError, KeyError, TypeError):
        return "other"
    old, new = arguments.get("old_str"), arguments.get("new_str")
    if old == new:
        return "changes nothing"
    root = _copy(repo)
    for before, after in edits:  # the stuck point's own edits, as the run made them
        target = next(p for p in sorted(root.glob("*.py")) if before in p.read_text())
        target.write_text(target.read_text().replace(before, after, 1))
    file = root / Path(str(arguments.get("path", ""))).name
    if not (file.exists() and isinstance(old, str) and old and old in file.read_text()):
        return "other"
    file.write_text(file.read_text().replace(old, str(new), 1))
    return "applies, tests pass" if tests_pass(root) else "applies"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repos", default="stack,temps")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--base-url", default="http://127.0.0.1:8080/v1")
    args = parser.parse_args()
    for repo in args.repos.split(","):
        retry, edits = _stuck_point(repo)
        for name, pinned_first in (("old_str (pinned) first", True), ("new_str (free) first", False)):
            counts: dict[str, int] = {}
            for seed in range(1, args.k + 1):
                request = urllib.request.Request(
                    f"{args.base_url}/chat/completions",
                    data=orjson.dumps({**_ordered(retry, pinned_first), "seed": seed}),
                    headers={"content-type": "application/json"},
                )
                with urllib.request.urlopen(request, timeout=600) as response:
                    reply = json.loads(response.read())["choices"][0]["message"]
                outcome = _outcome(reply, repo, edits)
                counts[outcome] = counts.get(outcome, 0) + 1
            print(f"{repo:6} {name:24} {json.dumps(counts, sort_keys=True)}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
