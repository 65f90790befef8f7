"""The package's shape, checked: layers import one way, a pattern's name lives in its own file,
no module grows past the size a reader takes in at once."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from proxy.engine.detectors import REGISTRY

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "proxy"

LAYERS = {"settings": 0, "engine": 1, "dialects": 2, "store": 2, "http": 3, "integrations": 3, "cli": 4}
"""Each folder's layer: a module may import its own layer and the ones below, never above.
`dialects` and `store` sit side by side and do not import each other; so do `http` (the proxy's
server) and `integrations` (the engine as another gateway's callback: LiteLLM's)."""
FORBIDDEN = {
    "settings": {"aiohttp", "redis", "multidict", "yarl", "prometheus_client", "structlog", "sqlite3"},
    "engine": {"aiohttp", "redis", "multidict", "yarl", "prometheus_client", "structlog", "sqlite3", "asyncio"},
    "dialects": {"aiohttp", "redis", "multidict", "yarl", "prometheus_client", "structlog", "sqlite3", "asyncio"},
    "store": {"aiohttp", "multidict", "yarl", "prometheus_client"},
    "integrations": {"aiohttp", "multidict", "yarl", "prometheus_client", "structlog"},
}
"""Third-party and standard modules a layer must not import: the engine is pure and
synchronous, settings and dialects likewise; stores know nothing of HTTP; an integration runs in
its gateway's process and logs as it does (standard `logging`)."""
ENGINE_LAYERS = {"text": 0, "outputs": 1, "reading": 2, "state": 3, "writing": 4, "detectors": 5, "plan": 6}
"""The engine's own folders, by job: the transcript as text (messages, calls, tokens); what a
tool's output says (its outcome, its failure's evidence, excerpts of the files it names); what a
call does (a check, an edit, a read); the conversation's state and its fold; writing the agent's
next call and the remedy's words (its vocabulary, the held edit, what every remedy shares); the
patterns, one file each; the plan of a turn's reply. A module may import its own folder and the
ones below it. Modules directly in `proxy/engine/` (the engine itself) sit above them all."""
HTTP_LAYERS = {"observe": 0, "runtime": 1, "upstream": 2, "reply": 3, "pipeline": 4, "serving": 5}
"""The HTTP layer's folders, by job: what a request did, recorded and observed; what it runs under
(teams, the caches, the keys); the upstream (sending, its errors, relaying); the reply stage; the
request pipeline; serving (the app, its routes, admin, reload, workers). A module may import its
own folder and the ones below it."""
QUIET = {"pipeline", "reply", "upstream"}
"""The request's path: its modules log, count and trace nothing themselves; they add typed events
to the request's record, which the observer turns into logs, metrics and spans."""
QUIET_MAY_IMPORT = {
    "proxy.http.observe.outcome",
    "proxy.http.observe.record",
    "proxy.http.observe.marks",
    "proxy.http.observe.usage",
}
"""What of `observe` the request's path may import: the record, its enum, its marks (and
`usage.is_streaming`, which tells a stream by its content type)."""
QUIET_FORBIDDEN = {"structlog", "logging", "prometheus_client", "opentelemetry"}
MAX_LINES = 300
MAX_MODULES = 15
"""Modules a folder of the package holds at most (the detectors' excepted: one file per pattern)."""
PATTERNS = PACKAGE / "engine" / "detectors"


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def layer_of(path: Path) -> str | None:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else None


def imports(path: Path) -> list[str]:
    """Every module name `path` imports, at any depth (function-level imports included)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return found


def test_every_module_is_in_a_layer() -> None:
    """Only the package's entry points sit outside a layer folder."""
    loose = [p.name for p in modules() if layer_of(p) is None]
    assert sorted(loose) == ["__init__.py", "__main__.py"]
    assert {layer_of(p) for p in modules()} - {None} == set(LAYERS)


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_go_one_way(path: Path) -> None:
    """No module imports a layer above its own (or the sibling layer beside it)."""
    layer = layer_of(path)
    if layer is None:
        return
    bad = []
    for name in imports(path):
        parts = name.split(".")
        if parts[0] == "proxy" and len(parts) > 1 and parts[1] in LAYERS:
            target = parts[1]
            if target != layer and LAYERS[target] >= LAYERS[layer]:
                bad.append(name)
        elif parts[0] in FORBIDDEN.get(layer, set()):
            bad.append(name)
    assert bad == [], f"{path.relative_to(ROOT)} ({layer}) imports {bad}"


def engine_layer_of(path: Path) -> int | None:
    """The engine sub-layer of a module in `proxy/engine/` (top-level modules: above all)."""
    parts = path.relative_to(PACKAGE).parts if path.is_relative_to(PACKAGE) else path.parts
    if parts[0] != "engine":
        return None
    return ENGINE_LAYERS[parts[1]] if len(parts) > 2 else len(ENGINE_LAYERS)


def upward_engine_imports(path: Path, placed: Path | None = None) -> list[str]:
    """The engine modules `path` imports from an engine folder above its own (`placed`: where
    in the package it sits, when it is not there)."""
    own = engine_layer_of(placed or path)
    if own is None:
        return []
    bad = []
    for name in imports(path):
        parts = name.split(".")
        if parts[:2] != ["proxy", "engine"] or len(parts) < 3:
            continue
        target = ENGINE_LAYERS.get(parts[2], len(ENGINE_LAYERS))
        if target > own:
            bad.append(name)
    return bad


def test_every_engine_module_is_in_an_engine_folder() -> None:
    """The engine's folders are the ones the layering names, and only the engine itself sits
    directly in `proxy/engine/`."""
    engine = PACKAGE / "engine"
    folders = {p.name for p in engine.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(ENGINE_LAYERS)
    assert sorted(p.name for p in engine.glob("*.py")) == ["__init__.py", "core.py"]


@pytest.mark.parametrize(
    "path",
    [p for p in modules() if engine_layer_of(p) is not None],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_engine_folders_import_one_way(path: Path) -> None:
    """Within the engine: an output's reading never imports a call's, the reading never the
    state, the state never the writing, the writing never a pattern, the detectors never the plan."""
    assert upward_engine_imports(path) == [], f"{path.relative_to(ROOT)} imports {upward_engine_imports(path)}"


def test_the_engine_check_catches_an_upward_import(tmp_path: Path) -> None:
    """The check itself: a module of the reading that imports the state is seen."""
    fake = tmp_path / "probe.py"
    fake.write_text("from proxy.engine.state.failure import RepairState\nfrom proxy.engine.text import transcript\n")
    placed = Path("engine", "reading", "probe.py")
    assert upward_engine_imports(fake, placed) == ["proxy.engine.state.failure"]


def test_the_import_check_catches_an_upward_import(tmp_path: Path) -> None:
    """The check itself: an engine module importing the HTTP layer or aiohttp is seen."""
    fake = tmp_path / "bad.py"
    fake.write_text(
        "import aiohttp\nfrom proxy.http.serving.app import make_app\nfrom proxy.settings.kinds import Action\n"
    )
    assert imports(fake) == ["aiohttp", "proxy.http.serving.app", "proxy.settings.kinds"]


def test_offline_commands_load_no_network_code() -> None:
    """`repair-proxy replay` runs the engine alone: importing it loads no aiohttp, Redis or store."""
    code = (
        "import sys, proxy.cli.replay, proxy.engine.core;"
        "bad = [m for m in ('aiohttp', 'redis', 'proxy.http', 'proxy.store', 'prometheus_client') if m in sys.modules];"
        "print(bad)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_is_over_the_size_limit(path: Path) -> None:
    """A module is read in one sitting: at most about 300 lines."""
    assert len(path.read_text().splitlines()) <= MAX_LINES


def _string_literals(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    }


def http_layer_of(path: Path) -> str | None:
    parts = path.relative_to(PACKAGE).parts if path.is_relative_to(PACKAGE) else path.parts
    return parts[1] if parts[0] == "http" and len(parts) > 2 else None


def http_offences(path: Path, placed: Path | None = None) -> list[str]:
    """What `path` (sitting at `placed` in the package, when it is not there) imports against the
    HTTP layer's order: a folder above its own, or, on the request's path, a logger, a metric,
    a tracer or the observer."""
    own = http_layer_of(placed or path)
    if own is None:
        return []
    bad = []
    for name in imports(path):
        parts = name.split(".")
        if (
            (parts[:2] == ["proxy", "http"] and len(parts) > 2 and HTTP_LAYERS.get(parts[2], 0) > HTTP_LAYERS[own])
            or (own in QUIET and parts[0] in QUIET_FORBIDDEN)
            or (own in QUIET and parts[:3] == ["proxy", "http", "observe"] and name not in QUIET_MAY_IMPORT)
        ):
            bad.append(name)
    return bad


def test_every_http_module_is_in_an_http_folder() -> None:
    """The HTTP layer's folders are the ones its layering names; nothing sits directly in
    `proxy/http/` but its `__init__.py`."""
    http = PACKAGE / "http"
    folders = {p.name for p in http.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(HTTP_LAYERS)
    assert sorted(p.name for p in http.glob("*.py")) == ["__init__.py"]


@pytest.mark.parametrize(
    "path", [p for p in modules() if http_layer_of(p) is not None], ids=lambda p: str(p.relative_to(ROOT))
)
def test_http_folders_import_one_way(path: Path) -> None:
    """Within the HTTP layer: observe <- runtime <- upstream <- reply <- pipeline <- serving; and
    the pipeline, the reply stage and the upstream never log, count or trace themselves."""
    assert http_offences(path) == [], f"{path.relative_to(ROOT)} imports {http_offences(path)}"


def test_the_http_check_catches_a_logger_on_the_request_path(tmp_path: Path) -> None:
    """The check itself: a reply-stage module importing structlog, the metrics or the serving app is seen."""
    fake = tmp_path / "probe.py"
    fake.write_text(
        "import structlog\nfrom proxy.http.observe.metrics import Metrics\n"
        "from proxy.http.observe.record import Record\nfrom proxy.http.serving.app import make_app\n"
    )
    placed = Path("http", "reply", "probe.py")
    assert http_offences(fake, placed) == ["structlog", "proxy.http.observe.metrics", "proxy.http.serving.app"]


def test_no_folder_holds_more_than_fifteen_modules() -> None:
    """A folder is taken in at a glance: at most `MAX_MODULES` modules, its `__init__.py` counted.
    Not the detectors: one file per pattern, however many patterns there are."""
    folders = {p.parent for p in modules()} - {PATTERNS}
    crowded = {str(f.relative_to(ROOT)): n for f in folders if (n := len(list(f.glob("*.py")))) > MAX_MODULES}
    assert crowded == {}


def test_the_detectors_folder_holds_only_patterns() -> None:
    """Besides the patterns (each file's stem a registered pattern's name), `detectors/` holds
    what a pattern is (`base`) and the little the loop patterns share (`calls`): anything else,
    the words several remedies share or the next call they write, lives in the folder of its job."""
    names = {d.name for d in REGISTRY}
    others = sorted(p.name for p in PATTERNS.glob("*.py") if p.stem not in names)
    assert others == ["__init__.py", "base.py", "calls.py"]
    assert {p.stem for p in PATTERNS.glob("*.py")} >= names


def test_a_pattern_name_is_written_only_in_its_own_file() -> None:
    """Outside its detector file (and the policy TOML, and tests), no code names a pattern:
    everything else looks the detector up."""
    names = {d.name for d in REGISTRY}
    offenders = []
    for path in modules():
        own = path.stem if path.parent.name == "detectors" else None
        for literal in _string_literals(path) & names:
            if literal != own:
                offenders.append(f"{path.relative_to(ROOT)}: {literal!r}")
    assert offenders == []
