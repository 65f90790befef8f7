"""The Codex CLI (`codex exec`, from the npm registry) with a model provider pointed at BASE:
the Responses API, streamed; it runs its shell tool for real in the repository. What its user
sees is what `codex exec` prints. Run as `python codex.py BASE MODE PROGRAM`."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from common import TASK, args, report

base, mode = args()
program = sys.argv[3]
provider = f'model_providers.tap={{name="tap", base_url="{base}/v1", env_key="TAP_API_KEY", wire_api="responses"}}'
with tempfile.TemporaryDirectory() as home:
    command = [
        program, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
        "-c", provider, "-c", "model_provider=tap", "-m", "m",
        "What is the capital of France?" if mode == "plain" else TASK,
    ]  # fmt: skip
    env = {**os.environ, "CODEX_HOME": home, "TAP_API_KEY": "sk-matrix", "NO_COLOR": "1"}
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=240, env=env, stdin=subprocess.DEVNULL, check=False
    )
report(done.stdout, code=done.returncode, stderr=done.stderr[-3000:])
