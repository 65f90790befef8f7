"""Claude Code (`claude -p`, the native CLI from the npm registry) with `ANTHROPIC_BASE_URL` at BASE
and a dummy key: Anthropic Messages, streamed; it runs its Bash tool for real in the repository.
Its telemetry, error reports and auto-update are off (its documented variables), its home and
config directory a fresh temporary one; the machine has no internet, and every run is bounded.
What its user sees is what `claude -p` prints. Run as `python claude_code.py BASE MODE PROGRAM`."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from common import TASK, args, report

base, mode = args()
program = sys.argv[3]
QUIET = {
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # telemetry, error reports, update checks, ...
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
}
with tempfile.TemporaryDirectory() as home:
    command = [
        program, "-p", "What is the capital of France?" if mode == "plain" else TASK,
        "--model", "m", "--allowedTools", "Bash,Read,Edit,Write", "--max-turns", "8", "--output-format", "text",
    ]  # fmt: skip
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "CLAUDE_CONFIG_DIR": os.path.join(home, ".claude"),
        "ANTHROPIC_BASE_URL": base,
        "ANTHROPIC_API_KEY": "sk-matrix",
        "ANTHROPIC_SMALL_FAST_MODEL": "m",  # its side requests (titles, summaries), if any, to the same model
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": "m",
        "NO_COLOR": "1",
        **QUIET,
    }
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=240, env=env, stdin=subprocess.DEVNULL, check=False
    )
report(done.stdout, code=done.returncode, stderr=done.stderr[-3000:])
