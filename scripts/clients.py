"""Install the real agent clients the client matrix drives (`tests/matrix/`), each pinned, in
an environment of its own, cached outside the checkout so a second run installs nothing.

    python scripts/clients.py            # install what is missing; print where each one is
    python scripts/clients.py --list     # where each one is (or why it is not)

Python clients get a virtual environment each (`tests/matrix/requirements/<name>.txt`: their
pins do not agree with one another: openai-agents wants openai 3, litellm openai 2); the Codex
CLI and Claude Code come from the npm registry (`<name>.npm`; Claude Code's package brings its
native binary as an optional dependency for this platform). A client that cannot be installed here is
reported and left out; its tests are skipped, saying why.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "tests" / "matrix" / "requirements"


PROGRAMS = {"claude_code": "claude"}
"""An npm client whose program is not named as its spec is."""


def cache_dir() -> Path:
    return Path(os.environ.get("REPAIR_PROXY_CACHE", Path.home() / ".cache" / "repair-proxy")) / "clients"


def home(spec: Path) -> Path:
    """Where a client's environment lives: named by its pins, so a changed pin installs anew."""
    digest = hashlib.sha256(spec.read_bytes()).hexdigest()[:10]
    return cache_dir() / f"{spec.stem}-{digest}"


def executable(name: str) -> Path | None:
    """The installed client's interpreter (Python) or program (npm), if it is installed."""
    for spec in sorted(REQUIREMENTS.glob(f"{name}.*")):
        where = home(spec)
        npm_program = where / "node_modules" / ".bin" / PROGRAMS.get(name, name)
        program = where / "bin" / "python" if spec.suffix == ".txt" else npm_program
        if (where / ".installed").exists() and program.exists():
            return program
    return None


def _install(spec: Path) -> str:
    where = home(spec)
    if (where / ".installed").exists():
        return "cached"
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    if spec.suffix == ".txt":
        steps = [
            [sys.executable, "-m", "venv", str(where)],
            [
                str(where / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                "-r",
                str(spec),
            ],
        ]
    else:
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("npm is not installed")
        steps = [
            [npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(where), spec.read_text().strip()]
        ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            shutil.rmtree(where, ignore_errors=True)
            raise RuntimeError(f"{' '.join(step[:4])}... failed:\n{done.stderr[-1500:]}")
    (where / ".installed").write_text(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    return "installed"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--list", action="store_true", help="only say where each client is")
    args = parser.parse_args()
    for spec in sorted(REQUIREMENTS.iterdir()):
        started = time.monotonic()
        if args.list:
            found = executable(spec.stem)
            print(f"{spec.stem:<16} {found or 'not installed'}")
            continue
        try:
            what = _install(spec)
        except (RuntimeError, OSError) as exc:
            print(f"{spec.stem:<16} NOT installed ({exc}); its client-matrix tests will be skipped", flush=True)
            continue
        print(f"{spec.stem:<16} {what} in {time.monotonic() - started:.0f}s: {home(spec)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
