"""Does the server read every call the held `sed` schema lets the model write?

The block rung, the finish gate and the action gate hold a one-shell agent's re-ask to an
in-place `sed` of one file (`Vocabulary.shell_edit`, its script shaped by `SED_SCRIPT`), sent as
a JSON Schema `pattern` in `response_format`. llama.cpp builds its grammar from that pattern over
the raw characters between the string's quotes; a text the grammar lets through that is no JSON
string fails the reply after the generation (HTTP 500, "does not match the expected peg-native
format"). This asks a model server for that call, `--seeds` times at temperature 1, with a file
full of dots and double quotes, and prints how many replies came back 200 and how many did not,
each with the command the model wrote.

Run against the model server itself (not through the proxy, which would retry on a 500):

    python scripts/real_model.py serve qwen --port 8080 &
    python bench/held_sed.py --upstream http://127.0.0.1:8080 --seeds 12
    python bench/held_sed.py --upstream http://127.0.0.1:8080 --seeds 12 --lines   # held to the code's lines

Run it from a checkout at another commit to compare that commit's pattern.
"""

from __future__ import annotations

import argparse
import json
import urllib.error
import urllib.request
from typing import Any

from proxy.engine.plan.callschema import call_schema
from proxy.engine.writing.sed_script import SED_SCRIPT, held_script
from proxy.engine.writing.vocabulary import Shaped

BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
}
CODE = (
    "class Stack:\n    def push(self, item):\n        self.items.append(item)\n\n"
    "    def pop(self):\n        item = self.items.pop(0)\n        return item\n\n"
    '    def name(self):\n        return "stack \\"main\\""\n'
)
MESSAGES = [
    {"role": "system", "content": "You fix bugs. Reply with one tool call as JSON."},
    {
        "role": "user",
        "content": f"stack.py:\n{CODE}\nThe test expects pop() to return the last item pushed, and name() to "
        'return "Stack". Change stack.py with one sed -i substitution, using \\. for dots and double quotes '
        "where needed.",
    },
]


def written_call(upstream: str, body: dict[str, Any], timeout: float = 300) -> tuple[int, str]:
    """One chat request to the model server: (200, the call's text as the model wrote it: a tool
    call's arguments, else the reply's content), or (the error status, the error's start)."""
    request = urllib.request.Request(
        f"{upstream.rstrip('/')}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            message = json.loads(response.read())["choices"][0]["message"]
    except urllib.error.HTTPError as error:
        return error.code, error.read()[:120].decode(errors="replace")
    calls = message.get("tool_calls") or []
    return 200, calls[0]["function"]["arguments"] if calls else message.get("content") or ""


def ask(upstream: str, seed: int, lines: bool = False) -> tuple[int, str]:
    """One request for the held call: (the status, the command written or the error's start).
    `lines`: its text to replace held to one of the code's lines (`held_script`), as where the
    proxy knows the lines to change."""
    script = held_script(CODE) if lines else SED_SCRIPT
    schema = call_schema([BASH], {"bash"}, pinned={"bash": {"command": Shaped(f"^sed -i '{script}' stack\\.py$")}})
    body: dict[str, Any] = {
        "messages": MESSAGES,
        "tools": [BASH],
        "tool_choice": {"type": "function", "function": {"name": "bash"}},
        "response_format": {"type": "json_schema", "json_schema": {"name": "call", "schema": schema}},
        "max_tokens": 120,
        "temperature": 1.0,
        "seed": seed,
    }
    status, written = written_call(upstream, body)
    if status != 200:
        return status, written
    try:  # the call as JSON (in `content` where the server returns the schema's object as text)
        call = json.loads(written)
        command = (call.get("arguments") or call).get("command")
    except (ValueError, AttributeError):
        command = None
    return 200, command if isinstance(command, str) else str(written)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", default="http://127.0.0.1:8080")
    parser.add_argument("--seeds", type=int, default=12)
    parser.add_argument("--lines", action="store_true", help="hold the text to replace to one of the code's lines")
    args = parser.parse_args()
    failed = 0
    for seed in range(args.seeds):
        status, written = ask(args.upstream, seed, args.lines)
        failed += status != 200
        print(f"seed {seed:2d}  {status}  {written}")
    print(f"{args.seeds - failed} of {args.seeds} read, {failed} failed by the server")


if __name__ == "__main__":
    main()
