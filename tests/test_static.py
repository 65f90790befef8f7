"""The code base's own checks, run as tests so the one test command covers them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)


def test_ruff_lint_is_clean() -> None:
    """ruff finds nothing in the package, tests and benchmarks."""
    result = run(sys.executable, "-m", "ruff", "check", "proxy", "tests", "bench", "scripts")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_applied() -> None:
    """Every file is as ruff format writes it."""
    result = run(sys.executable, "-m", "ruff", "format", "--check", "proxy", "tests", "bench", "scripts")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_is_clean() -> None:
    """The package type-checks under mypy --strict."""
    result = run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_global_statements() -> None:
    """State lives on the app or in typed objects, never in module globals."""
    offenders = [
        str(p)
        for p in (ROOT / "proxy").rglob("*.py")
        if any(line.strip().startswith("global ") for line in p.read_text().splitlines())
    ]
    assert offenders == []
