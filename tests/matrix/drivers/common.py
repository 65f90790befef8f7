"""What every driver shares (standard library only: drivers run in each client's own environment).

A driver is run as `python <driver>.py BASE MODE` in a copy of a small repository whose test
fails; BASE is the root URL to talk to (the tap in front of the proxy), MODE is `plain` (a few
ordinary requests, nothing for the proxy to do) or `stuck` (an agent loop that runs the
failing check until the proxy hands the run back). It prints one JSON line last: `shown`, the
text the client ends up showing its user.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

TASK = "The test suite fails: run `python -m pytest -q` and fix calc.py so that it passes."
MAX_TURNS = 8
BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a bash command in the repository and return its output.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
}


def args() -> tuple[str, str]:
    base, mode = sys.argv[1], sys.argv[2]
    return base.rstrip("/"), mode


def bash(command: Any) -> str:
    """Run the command for real, in the repository, as a coding agent's shell tool does."""
    if isinstance(command, list):
        command = " ".join(str(c) for c in command[2:]) if command[:2] == ["bash", "-lc"] else " ".join(command)
    done = subprocess.run(["bash", "-lc", str(command)], capture_output=True, text=True, timeout=60, check=False)
    return f"{done.stdout}{done.stderr}\n[exit code: {done.returncode}]"


def report(shown: str, **extra: Any) -> None:
    print(json.dumps({"shown": shown, **extra}), flush=True)
