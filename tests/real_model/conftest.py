"""A real llama.cpp server for the tests marked `real_model`, when its cached build and model exist.

Nothing is built or downloaded here: `python scripts/real_model.py build` and `fetch qwen` do
that once. Without them these tests are skipped and the reason is printed (pytest -ra).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import real_model


@pytest.fixture(scope="session")
def llama_qwen() -> Iterator[str]:
    """Base URL (…/v1) of llama-server running Qwen2.5-Coder-1.5B-Instruct on 127.0.0.1."""
    model = real_model.cache_dir() / "models" / real_model.QWEN_FILE
    if not real_model.server_binary().exists():
        pytest.skip(
            f"no cached llama-server build at {real_model.server_binary()} (run: python scripts/real_model.py build)"
        )
    if not model.exists():
        pytest.skip(f"no cached model at {model} (run: python scripts/real_model.py fetch qwen)")
    with real_model.serve(model, template=real_model.qwen_template()) as server:
        yield server.base_url


@pytest.fixture(scope="session")
def llama_smollm() -> Iterator[str]:
    """Base URL (…/v1) of llama-server running SmolLM2-135M-Instruct with llama.cpp's Qwen2.5 template, temperature 0."""
    model = real_model.cache_dir() / "models" / real_model.SMOLLM_FILE
    if not real_model.server_binary().exists():
        pytest.skip(
            f"no cached llama-server build at {real_model.server_binary()} (run: python scripts/real_model.py build)"
        )
    if not model.exists():
        pytest.skip(f"no cached model at {model} (run: python scripts/real_model.py fetch smollm)")
    with real_model.serve(model, template=real_model.qwen_template(), context=4096) as server:
        yield server.base_url
