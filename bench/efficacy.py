"""Do the remedies change what a real model does next?

Real stuck transcripts in three tool vocabularies (OpenHands-style, Claude-Code-style, a single
shell tool), each cut at the request that trips `stuck_same_diagnostic` (the third identical
test failure after two edits that did not change it). For each, the next action is sampled K
times at temperature T in each arm: no injection, and the proxy's own injection placed as a
system message, a user message, and a suffix of the last tool result. Each action is classified
(same edit again, same failing command again, declared done, an empty reply, a different
step, unparseable)
and the counts printed as a table.

Model: Qwen2.5-Coder-1.5B-Instruct Q4_K_M served by llama.cpp's llama-server (both from PyPI,
see scripts/real_model.py). With llama.cpp's stock Qwen2.5 template this model writes its tool
call as bare JSON text, so the text is parsed as the action.

Run: .venv/bin/python bench/efficacy.py [--k 8] [--runs 3] [--temperature 0.7] [--base-url URL] [--budget-seconds 3600]
(inside the project's environment: it imports the proxy)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import orjson

    import proxy  # noqa: F401 - the project itself
except ModuleNotFoundError:  # run by a Python without the project installed
    raise SystemExit("run it with the project's environment: .venv/bin/python bench/efficacy.py") from None

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import real_model  # noqa: E402

from proxy.dialects import CHAT, plan_offline  # noqa: E402
from proxy.engine.core import Engine  # noqa: E402
from proxy.engine.reading.canonical import call_key  # noqa: E402
from proxy.engine.reading.classify import Classifier  # noqa: E402
from proxy.engine.state.cache import StateCache  # noqa: E402
from proxy.engine.text.messages import parse_arguments  # noqa: E402
from proxy.engine.text.tokens import TokenCounter  # noqa: E402
from proxy.settings.kinds import CallKind  # noqa: E402
from proxy.settings.policy import policy_from_mapping  # noqa: E402

ARMS = ("none", "system", "user", "tool_suffix")
CLASSES = ("same edit", "same failing command", "declared done", "empty reply", "different step", "unparseable")

SYSTEM = (
    "You are an autonomous coding agent working in the repository at /workspace. Use the tools to inspect "
    "files, edit them and run the tests until the task is done. Call exactly one tool per reply."
)
TASK = "The test tests/test_calc.py::test_add fails. Fix the bug so that the test suite passes."
PARSE_PY = (
    "from calc.lexer import tokens\n\n\ndef evaluate(expr: str) -> int:\n    left, op, right = tokens(expr)\n"
    '    if op == "+":\n        return left + right\n    raise ValueError(f"unknown operator {op}")\n'
)
FAILURE = """============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.3.2, pluggy-1.5.0
rootdir: /workspace
collected 3 items

tests/test_calc.py F..                                                   [100%]

=================================== FAILURES ===================================
___________________________________ test_add ___________________________________

    def test_add():
>       assert evaluate("1 + 2") == 3
E       AssertionError: assert 4 == 3
E        +  where 4 = evaluate('1 + 2')

tests/test_calc.py:6: AssertionError
=========================== short test summary info ============================
FAILED tests/test_calc.py::test_add - AssertionError: assert 4 == 3
========================= 1 failed, 2 passed in {t}s ==========================
"""
EDITS = [
    ("return left + right", "return int(left) + int(right)"),
    ("return int(left) + int(right)", "return (left + right)"),
]


def _fn(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


S = {"type": "string"}


@dataclass(frozen=True)
class Vocab:
    name: str
    tools: list[dict[str, Any]]
    view: Callable[[str], tuple[str, dict[str, Any]]]
    run: Callable[[str], tuple[str, dict[str, Any]]]
    edit: Callable[[str, str, str], tuple[str, dict[str, Any], str]]


VOCABS = [
    Vocab(
        "openhands",
        [
            _fn("execute_bash", {"command": S}, ["command"]),
            _fn(
                "str_replace_editor",
                {
                    "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert", "undo_edit"]},
                    "path": S,
                    "old_str": S,
                    "new_str": S,
                    "file_text": S,
                    "view_range": {"type": "array", "items": {"type": "integer"}},
                },
                ["command", "path"],
            ),
            _fn("finish", {"message": S}, ["message"]),
        ],
        lambda path: ("str_replace_editor", {"command": "view", "path": path}),
        lambda cmd: ("execute_bash", {"command": cmd}),
        lambda path, old, new: (
            "str_replace_editor",
            {"command": "str_replace", "path": path, "old_str": old, "new_str": new},
            f"The file {path} has been edited.",
        ),
    ),
    Vocab(
        "claude_code",
        [
            _fn("Bash", {"command": S, "description": S}, ["command"]),
            _fn("Read", {"file_path": S, "offset": {"type": "integer"}, "limit": {"type": "integer"}}, ["file_path"]),
            _fn("Edit", {"file_path": S, "old_string": S, "new_string": S}, ["file_path", "old_string", "new_string"]),
            _fn("Grep", {"pattern": S, "path": S}, ["pattern"]),
        ],
        lambda path: ("Read", {"file_path": path}),
        lambda cmd: ("Bash", {"command": cmd}),
        lambda path, old, new: (
            "Edit",
            {"file_path": path, "old_string": old, "new_string": new},
            f"The file {path} has been updated.",
        ),
    ),
    Vocab(
        "single_shell",
        [_fn("bash", {"command": S}, ["command"])],
        lambda path: ("bash", {"command": f"cat {path}"}),
        lambda cmd: ("bash", {"command": cmd}),
        lambda path, old, new: ("bash", {"command": f"sed -i 's/{old}/{new}/' {path}"}, ""),
    ),
]


def stuck_transcript(vocab: Vocab) -> dict[str, Any]:
    """view the code, test (fail), edit, test (same failure), edit, test (same failure): request 3 trips."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    counter = 0

    def turn(name: str, arguments: dict[str, Any], result: str, thought: str = "") -> None:
        nonlocal counter
        counter += 1
        call_id = f"call_{vocab.name}_{counter}"
        messages.append(
            {
                "role": "assistant",
                "content": thought or None,
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": result})

    test_cmd = "cd /workspace && python -m pytest tests/test_calc.py"
    # Like most native tool-calling agents, the assistant turns carry the call and no text.
    turn(*vocab.view("/workspace/calc/parse.py"), PARSE_PY)
    turn(*vocab.run(test_cmd), FAILURE.replace("{t}", "0.31"))
    for (old, new), t in zip(EDITS, ("0.29", "0.33"), strict=True):
        name, arguments, out = vocab.edit("/workspace/calc/parse.py", old, new)
        turn(name, arguments, out)
        turn(*vocab.run(test_cmd), FAILURE.replace("{t}", t))
    return {"model": "qwen2.5-coder", "messages": messages, "tools": vocab.tools}


def arm_body(body: dict[str, Any], arm: str, tokens: TokenCounter) -> tuple[bytes, list[str]]:
    """The request in one arm: untouched, or as the proxy rewrites it with `placement = arm`."""
    raw = orjson.dumps(body)
    if arm == "none":
        return raw, []
    engine = Engine(policy_from_mapping({"repair": {"placement": arm}}, f"efficacy {arm}"), StateCache(10, 60), tokens)
    planned = plan_offline(engine, CHAT, raw, {})
    assert planned is not None and planned.decision.edit is not None, f"{arm}: the proxy did not inject"
    trips = [t.pattern.name for t in planned.decision.new_trips]
    assert trips == ["stuck_same_diagnostic"], trips
    return planned.body, [i.text for i in planned.decision.placed]


_FENCE = re.compile(r"```(?:json)?\s*|\s*```")


@dataclass(frozen=True)
class Reply:
    """The model's next action as read from its reply."""

    shape: str
    """"call" (a tool call), "text" (prose, no call), "empty" (nothing at all) or "unparseable"."""
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)


def parse_reply(message: dict[str, Any]) -> Reply:
    """A tool call from `tool_calls`, or from bare JSON text ({"name", "arguments"}), as this
    model writes it under llama.cpp's stock Qwen2.5 template."""
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        arguments, _ = parse_arguments(function.get("arguments"))
        return Reply("call", str(function.get("name", "")), dict(arguments or {}))
    content = message.get("content") or ""
    if not content.strip():
        return Reply("empty")
    text = _FENCE.sub("", content)
    start = text.find("{")
    if start == -1:
        return Reply("text")
    try:
        obj, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError:
        return Reply("unparseable")
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return Reply("unparseable")
    arguments = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(arguments, str):
        arguments, _ = parse_arguments(arguments)
    return Reply("call", obj["name"], dict(arguments or {}))


def classify_reply(reply: Reply, body: dict[str, Any], classifier: Classifier) -> str:
    if reply.shape == "empty":
        return "empty reply"
    if reply.shape == "unparseable":
        return "unparseable"
    if reply.shape == "text" or reply.name in ("finish", "submit"):
        return "declared done"
    kind = classifier.classify(reply.name, reply.arguments)
    failing = body["messages"][-2]["tool_calls"][0]["function"]
    failing_args, failing_raw = parse_arguments(failing["arguments"])
    same_key = call_key(failing["name"], failing_args, failing_raw, frozenset())
    if (
        call_key(reply.name, reply.arguments, json.dumps(reply.arguments), frozenset()) == same_key
        or kind.kind is CallKind.VERIFY
    ):
        return "same failing command"
    if kind.mutates and "parse.py" in json.dumps(reply.arguments):
        return "same edit"
    return "different step"


def sample(base_url: str, body: bytes, temperature: float, seed: int) -> dict[str, Any]:
    data = orjson.loads(body)
    data.update(temperature=temperature, seed=seed, max_tokens=160, stream=False)
    request = urllib.request.Request(
        f"{base_url}/chat/completions", data=orjson.dumps(data), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        reply: dict[str, Any] = orjson.loads(response.read())
    message: dict[str, Any] = reply["choices"][0]["message"]
    return message


def run(base_url: str, k: int, temperature: float, budget: float, runs: int) -> None:
    """K samples per scenario and arm, `runs` times over with fresh seeds; each run's counts are
    printed as it ends, then each class's mean and range over the runs."""
    tokens = TokenCounter()
    started = time.monotonic()
    table: dict[tuple[str, str], list[Counter[str]]] = {}
    examples: dict[tuple[str, str], str] = {}
    for repeat in range(runs):
        for vocab in VOCABS:
            body = stuck_transcript(vocab)
            classifier = Classifier(policy_from_mapping({}, "efficacy").classify)
            for arm in ARMS:
                request, injected = arm_body(body, arm, tokens)
                counts: Counter[str] = Counter()
                for i in range(k):
                    if time.monotonic() - started > budget:
                        raise SystemExit(f"time budget of {budget:.0f}s spent; the runs so far are above")
                    message = sample(base_url, request, temperature, seed=1000 + repeat * k + i)
                    counts[classify_reply(parse_reply(message), body, classifier)] += 1
                    examples.setdefault(
                        (vocab.name, arm), (message.get("content") or json.dumps(message.get("tool_calls")))[:160]
                    )
                table.setdefault((vocab.name, arm), []).append(counts)
                print(
                    f"run {repeat + 1}/{runs} {vocab.name:<13} {arm:<12} "
                    + " ".join(f"{counts[c]:>3}" for c in CLASSES),
                    flush=True,
                )
                if repeat == 0 and arm == "system" and injected:
                    print("    injected: " + injected[-1].replace("\n", "\n              ")[:900], flush=True)
    print(
        f"\nmodel: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama.cpp), K={k} per run, {runs} runs, "
        f"temperature={temperature}, {time.monotonic() - started:.0f}s; each cell: mean over the runs (min-max)"
    )
    print(f"{'scenario':<13} {'arm':<12} " + " | ".join(CLASSES))
    for (name, arm), counted in table.items():
        cells = []
        for c in CLASSES:
            values = [run[c] for run in counted]
            cells.append(f"{sum(values) / len(values):.1f} ({min(values)}-{max(values)})".rjust(max(len(c), 13)))
        print(f"{name:<13} {arm:<12} " + " | ".join(cells))
    print("\nfirst sample per arm:")
    for (name, arm), text in examples.items():
        print(f"  {name}/{arm}: {text!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--base-url", help="an already running llama-server's /v1 URL")
    parser.add_argument("--budget-seconds", type=float, default=3600)
    parser.add_argument("--runs", type=int, default=3, help="repeats of every arm, each with fresh seeds")
    args = parser.parse_args()
    if args.base_url:
        run(args.base_url.rstrip("/"), args.k, args.temperature, args.budget_seconds, args.runs)
        return
    try:
        model = real_model.fetch_qwen()
        with real_model.serve(model) as server:
            run(server.base_url, args.k, args.temperature, args.budget_seconds, args.runs)
    except real_model.Unavailable as exc:
        raise SystemExit(f"the real model cannot be had here: {exc}") from None


if __name__ == "__main__":
    main()
