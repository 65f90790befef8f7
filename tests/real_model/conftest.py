"""A real llama.cpp server for the tests marked `real_model`, when its cached build and model exist.

Nothing is built or downloaded here: `python scripts/real_model.py build` and `fetch qwen` do
that once. Without them these tests are skipped and the reason is printed (pytest -ra).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import real_model


def _serve_cached(model_file: str, fetch: str, context: int) -> Iterator[str]:
    """llama-server with a cached model, or a skip saying what to run to get it."""
    model = real_model.cache_dir() / "models" / model_file
    binary = real_model.server_binary()
    if not binary.exists():
        pytest.skip(f"no cached llama-server build at {binary} (run: python scripts/real_model.py build)")
    if not model.exists():
        pytest.skip(f"no cached model at {model} (run: python scripts/real_model.py fetch {fetch})")
    with real_model.serve(model, template=real_model.qwen_template(), context=context) as server:
        yield server.base_url


@pytest.fixture(scope="session")
def llama_qwen() -> Iterator[str]:
    """Base URL (…/v1) of llama-server running Qwen2.5-Coder-1.5B-Instruct on 127.0.0.1."""
    yield from _serve_cached(real_model.QWEN_FILE, "qwen", 8192)


@pytest.fixture(scope="session")
def llama_smollm() -> Iterator[str]:
    """Base URL (…/v1) of llama-server running SmolLM2-135M-Instruct with llama.cpp's Qwen2.5 template."""
    yield from _serve_cached(real_model.SMOLLM_FILE, "smollm", 4096)
