"""Does the order of a pinned edit's arguments decide whether a small model changes anything?

At a recovery-bench stuck point (`bench/repos/<repo>`, OpenHands style: the test failed three
times unchanged, the test and the code viewed), the proxy refuses the re-run and re-asks for an
edit whose `old_str` its call schema holds to the lines it has seen (`plan/callschema.py`, rule
4). The re-ask is sent K times (seeds 1..K) to a running llama-server in each of `VARIANTS`: the
declared order with `new_str` optional (as the tool declares it), `new_str` required after the
pinned arguments, and `new_str` required and first. Each reply is counted as an edit that changes nothing (`new_str` equal to
`old_str`), one with no `new_str` at all, one that applies (and whether the tests then pass, in a
fresh copy), or other. (llama.cpp's grammar writes the required properties first, in their order,
then the optional ones.)

Run (a model server up: python scripts/real_model.py serve qwen --port 8080):
    .venv/bin/python bench/pin_order.py [--repos stack,temps] [--k 8] [--base-url http://127.0.0.1:8080/v1]
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import orjson
from tiny_agent import OPENHANDS_TOOLS, REPOS, WORK, Tools, copy_repo, grade, stuck_start

from proxy.dialects import plan_offline
from proxy.dialects.chat import CHAT
from proxy.engine.core import Engine
from proxy.engine.plan.reply import Gate, ReplyView, judge
from proxy.settings.policy import load_policy


def _copy(repo: str, work: Path) -> Path:
    """A fresh copy of the repository in a folder of its own under `work`."""
    return copy_repo(repo, Path(tempfile.mkdtemp(dir=work)))


def _stuck_point(repo: str, work: Path) -> tuple[dict[str, Any], list[list[str]]]:
    """The re-ask the proxy sends at the stuck point, read through the engine as the proxy reads it."""
    edits = json.loads((REPOS / repo / "stuck.json").read_text())["edits"]
    root = _copy(repo, work)
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
    # the re-run refused by the failure model's own pattern, acting (it ships in shadow, where it refuses nothing)
    policy = load_policy(None)
    policy = policy.model_copy(update={"patterns": {**policy.patterns, "stuck_same_diagnostic": {"mode": "act"}}})
    planned = plan_offline(Engine.of(policy), CHAT, orjson.dumps(body), {})
    if planned is None:
        raise SystemExit("the stuck point could not be read")
    rerun = judge(ReplyView("", ("execute_bash",), ('{"command": "python -m pytest"}',)), planned.decision.reply)
    if rerun.refusal is None:
        raise SystemExit("the re-run was not refused at the stuck point")
    return orjson.loads(planned.retry(Gate.BLOCK, 1, refusal=rerun.refusal)), edits


VARIANTS = {
    "declared order, new_str optional": (False, False),
    "new_str required, after the pinned": (False, True),
    "new_str required, first": (True, True),
}
"""Each variant: (new_str first, new_str required). llama.cpp's grammar writes the required
properties first, in their order, then the optional ones, each of which the model may leave out."""


def _variant(retry: dict[str, Any], new_first: bool, new_required: bool) -> dict[str, Any]:
    """The re-ask with its arguments' schema in the variant's order and with its required list."""
    body = copy.deepcopy(retry)
    schema = body["response_format"]["json_schema"]["schema"]["properties"]["arguments"]
    props = schema["properties"]
    declared = next(t for t in OPENHANDS_TOOLS if t["function"]["name"] == "str_replace_editor")["function"]
    ordered = {k: props[k] for k in declared["parameters"]["properties"] if k in props}
    if new_first:
        ordered = {"new_str": ordered["new_str"], **{k: v for k, v in ordered.items() if k != "new_str"}}
    schema["properties"] = ordered
    required = [k for k in schema["required"] if k != "new_str"]
    schema["required"] = [*required, "new_str"] if new_required else required
    return body


def _outcome(reply: dict[str, Any], repo: str, edits: list[list[str]], work: Path) -> str:
    try:
        arguments = json.loads(reply.get("content") or "")["arguments"]
    except (ValueError, KeyError, TypeError):
        return "other"
    old, new = arguments.get("old_str"), arguments.get("new_str")
    if not isinstance(new, str):
        return "no new_str"
    if old == new:
        return "changes nothing"
    root = _copy(repo, work)
    for before, after in edits:  # the stuck point's own edits, as the run made them
        target = next(p for p in sorted(root.glob("*.py")) if before in p.read_text())
        target.write_text(target.read_text().replace(before, after, 1))
    file = root / Path(str(arguments.get("path", ""))).name
    if not (file.exists() and isinstance(old, str) and old and old in file.read_text()):
        return "other"
    file.write_text(file.read_text().replace(old, new, 1))
    graded = grade(root)  # right: its tests and its hidden checks pass; gamed: its tests alone
    return "applies, right" if graded.solved else "applies, gamed" if graded.gamed else "applies"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repos", default="stack,temps")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--base-url", default="http://127.0.0.1:8080/v1")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=WORK) as folder:  # every copy removed at the end
        work = Path(folder)
        for repo in args.repos.split(","):
            retry, edits = _stuck_point(repo, work)
            for name, (new_first, new_required) in VARIANTS.items():
                counts: dict[str, int] = {}
                for seed in range(1, args.k + 1):
                    request = urllib.request.Request(
                        f"{args.base_url}/chat/completions",
                        data=orjson.dumps({**_variant(retry, new_first, new_required), "seed": seed}),
                        headers={"content-type": "application/json"},
                    )
                    with urllib.request.urlopen(request, timeout=600) as response:
                        reply = json.loads(response.read())["choices"][0]["message"]
                    outcome = _outcome(reply, repo, edits, work)
                    counts[outcome] = counts.get(outcome, 0) + 1
                print(f"{repo:6} {name:36} {json.dumps(counts, sort_keys=True)}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
