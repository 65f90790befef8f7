"""aider, the command line, as its users run it: no tools, SEARCH/REPLACE edits in the reply,
and `--auto-test` feeding the test output back as a user message after each edit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from common import TASK, args, report

base, mode = args()
aider = Path(sys.executable).parent / "aider"
command = [
    str(aider),
    *("--model", "openai/m", "--openai-api-base", f"{base}/v1", "--openai-api-key", "sk-matrix"),
    *("--no-git", "--yes-always", "--no-check-update", "--no-analytics", "--no-show-model-warnings"),
    *("--no-pretty", "--no-fancy-input", "--map-tokens", "0", "--no-detect-urls", "--no-show-release-notes"),
    *("--edit-format", "diff"),
]
if mode == "plain":
    command += ["--message", "hi"]
else:
    command += ["--auto-test", "--test-cmd", "python -m pytest -q", "--message", TASK, "calc.py"]
env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "AIDER_ANALYTICS": "false"}
done = subprocess.run(
    command, capture_output=True, text=True, timeout=240, env=env, stdin=subprocess.DEVNULL, check=False
)
report(done.stdout, code=done.returncode, stderr=done.stderr[-2000:])
