"""Start-up and configuration as a new user meets them: each mistake refused at once, naming
the file (or flag, or variable) and the key, with what to do instead."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from support import Upstream, json_reply, post

from proxy.cli.main import main
from proxy.http.runtime.tenancy import build_runtime
from proxy.settings.config import load_settings

ROOT = Path(__file__).resolve().parents[2]


def check_config(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, Path]:
    config = tmp_path / "config.toml"
    config.write_text(text)
    code = main(["check-config", str(config)], environ={})
    captured = capsys.readouterr()
    return code, captured.out + captured.err, config


@pytest.mark.parametrize("upstream", ["127.0.0.1:11434/v1", "localhost:8000", "ftp://host/v1", "http:///v1"])
def test_check_config_refuses_an_upstream_without_scheme_or_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], upstream: str
) -> None:
    code, out, config = check_config(tmp_path, f'[upstream]\nbase_url = "{upstream}"\n', capsys)
    assert code == 2
    assert f"{config}: upstream.base_url:" in out
    assert "http://" in out


def test_a_teams_upstream_is_checked_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = '[[team]]\nname = "a"\nkeys = ["k-a"]\nupstream = "vllm:8000/v1"\n'
    code, out, config = check_config(tmp_path, text, capsys)
    assert code == 2
    assert f'{config}: team["a"].upstream:' in out  # by its name (issue 63: was team.0.upstream)


def test_a_teams_problems_name_it_by_its_name_or_else_its_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad policy file of team "blue" is `team["blue"].policy`; a team with no valid name is still
    found by its index."""
    text = '[[team]]\nname = "blue"\nkeys = ["k-b"]\npolicy = "missing.toml"\n[[team]]\nkeys = ["k-c"]\n'
    code, out, config = check_config(tmp_path, text, capsys)
    assert code == 2 and f"{config}: team.1.name:" in out
    code, out, config = check_config(tmp_path, text.split("[[team]]\nkeys", maxsplit=1)[0], capsys)
    assert code == 2 and f'{config}: team["blue"].policy: ' in out and "missing.toml" in out


def test_a_bad_flag_or_variable_is_blamed_on_itself(capsys: pytest.CaptureFixture[str]) -> None:
    """`--port 99999` is the command line's fault, a bad variable the environment's, not `<defaults>`."""
    assert main(["serve", "--port", "99999"], environ={}) == 2
    err = capsys.readouterr().err
    assert "command line: server.port:" in err and "<defaults>" not in err
    assert main(["serve"], environ={"REPAIR_PROXY_WORKERS": "many"}) == 2
    assert "environment REPAIR_PROXY_WORKERS: server.workers:" in capsys.readouterr().err


def test_a_preset_name_works_as_the_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`repair.policy = "openhands"` is the bundled preset, as `extends` takes it."""
    code, out, _config = check_config(tmp_path, '[repair]\npolicy = "openhands"\n', capsys)
    assert code == 0, out
    assert "openhands" in out
    runtime = build_runtime(load_settings(None, overrides={"repair": {"policy": "openhands"}}))
    assert runtime.teams["default"].engine.policy.name == "openhands"


def test_a_policy_that_cannot_be_read_is_the_config_keys_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, config = check_config(tmp_path, '[repair]\npolicy = "missing.toml"\n', capsys)
    assert code == 2
    assert f"{config}: repair.policy: {tmp_path / 'missing.toml'}: no such file" in out
    code, out, config = check_config(tmp_path, '[repair]\npolicy = "openhandz"\n', capsys)
    assert code == 2
    assert f"{config}: repair.policy: openhandz: no preset 'openhandz'" in out
    assert "openhands" in out  # the names there are


async def test_readyz_is_unready_when_the_base_url_lacks_v1(make_proxy, upstream: Upstream) -> None:
    """The upstream answers 404 where the models endpoint should be: not ready, and why."""
    upstream.reply_with(json_reply(b'{"error": "not found"}', status=404))
    proxy = await make_proxy(upstream_url=str(upstream.server.make_url("")).rstrip("/"))
    async with aiohttp.ClientSession() as client, client.get(proxy.make_url("/readyz")) as response:
        assert response.status == 503
        body = await response.json()
    assert body["status"] == "unready"
    assert "missing its /v1" in body["error"]
    upstream.reply_with(json_reply(b'{"error": "key needed"}', status=401))  # wants a key: still ready
    async with aiohttp.ClientSession() as client, client.get(proxy.make_url("/readyz")) as response:
        assert response.status == 200


async def test_a_request_without_any_key_is_told_it_sent_none(make_proxy) -> None:
    proxy = await make_proxy({"team": [{"name": "alpha", "keys": ["key-alpha"]}]})
    status, _headers, body = await post(proxy, b"{}")
    assert status == 401
    error = orjson.loads(body)["error"]
    assert error["code"] == "missing_proxy_key"
    assert "got none" in error["message"]
    status, _headers, body = await post(proxy, b"{}", Authorization="Bearer wrong")
    assert orjson.loads(body)["error"]["code"] == "invalid_proxy_key"


async def test_real_model_serve_refuses_a_busy_port() -> None:
    """`scripts/real_model.py serve` on a port another process holds: a clear error, not 'ready'."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(ROOT / "scripts" / "real_model.py"),
            "serve",
            "qwen",
            "--port",
            str(port),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode != 0
    assert f"port {port} is in use" in err.decode()
    assert b"ready" not in out


def test_check_config_reads_the_environment_serve_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`REPAIR_PROXY_POLICY=codex repair-proxy check-config` checks what `serve` would run on (issue
    63: it reported the default policy, and wanted a file): the variable over the file, named."""
    assert main(["check-config"], environ={"REPAIR_PROXY_POLICY": "codex"}) == 0
    out = capsys.readouterr().out
    assert "<defaults>: ok" in out and "codex.toml" in out and "from the environment: REPAIR_PROXY_POLICY" in out
    config = tmp_path / "config.toml"
    config.write_text('[repair]\npolicy = "openhands"\n[upstream]\nbase_url = "http://127.0.0.1:8000/v1"\n')
    environ = {"REPAIR_PROXY_POLICY": "codex", "REPAIR_PROXY_UPSTREAM": "http://10.0.0.5:11434/v1", "HOME": "/x"}
    assert main(["check-config", str(config)], environ=environ) == 0
    out = capsys.readouterr().out
    assert "default -> http://10.0.0.5:11434/v1" in out and "codex.toml" in out and "openhands" not in out
    assert "from the environment: REPAIR_PROXY_UPSTREAM, REPAIR_PROXY_POLICY" in out
    assert main(["check-config", str(config)], environ={"REPAIR_PROXY_POLICY": "nope"}) == 2
    assert "environment REPAIR_PROXY_POLICY: repair.policy: nope" in capsys.readouterr().err


async def test_report_errors_name_the_url_tried(proxy: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """`repair-proxy report URL` that cannot be read says which URL and what to give instead (issue
    63: `error: <urlopen error [Errno 111] Connection refused>`, no URL): nothing listens, a page
    that is no metrics, a 404."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}/metrics"
    base = str(proxy.make_url("")).rstrip("/")
    for url, said in ((closed, "cannot read"), (f"{base}/healthz", "is no Prometheus metrics"), (f"{base}/foo", "404")):
        assert await asyncio.to_thread(main, ["report", url], {}) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and url in err and said in err, err
        assert "http://127.0.0.1:8400/metrics" in err
    assert await asyncio.to_thread(main, ["report", f"{base}/metrics"], {}) == 0
    assert "no watched trips have settled yet" in capsys.readouterr().out
