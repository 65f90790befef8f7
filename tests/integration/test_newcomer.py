"""A newcomer's first hour, as the README walks it (issue 63), each step run as they would run it:
the real `repair-proxy` process with a clean environment and a fresh home.

1. the README's first command's `serve`, on the embedded defaults: it starts, says its upstream
   answers, passes an agent's bytes untouched and shows the pattern watching in shadow;
2. `repair-proxy demo`: its story with no warning lines in it, ending handed back;
3. `check-config` with the environment `serve` reads (`REPAIR_PROXY_POLICY=codex`);
4. a dead upstream: a warning naming it at start, the proxy serving anyway, a 502 and `/readyz`
   naming its address and the variable that set it;
5. a path the proxy does not serve: an OpenAI-shaped 404;
6. `--help`: `serve`'s defaults, and a demo that does not promise what it does not show.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import openai
import orjson
import pytest
from chat import stuck_requests
from support import Upstream, completion, free_port, json_reply, read_json_log, wait_healthy

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
CALL = completion(
    "", tool_calls=[{"id": "c", "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}]
)
"""The model's answer: a call (no gate of the reply stage has anything to say)."""


def first_serve() -> list[str]:
    """The README's first command, its `serve` part, as arguments after `repair-proxy`."""
    first = README.split("```sh\n", 1)[1].splitlines()[0].split("#")[0]
    command = first.split("&&")[-1].split()
    assert command == [".venv/bin/repair-proxy", "serve"], command
    return command[1:]


def clean_environment(home: Path, **variables: str) -> dict[str, str]:
    """The process's environment without any REPAIR_PROXY_* of the machine, a fresh home (the
    default verdict store goes there), and `variables`."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("REPAIR_PROXY_", "OTEL_"))}
    return {**kept, "HOME": str(home), **variables}


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`repair-proxy ARGS`, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "proxy", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@dataclass
class Served:
    """A `serve` process as the README starts it, its JSON log read as it comes."""

    port: int
    process: asyncio.subprocess.Process
    log: list[dict[str, object]] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def logged(self, event: str) -> dict[str, object]:
        """The first log line of `event` (waited for, 10 s at most)."""
        for _ in range(100):
            found = [line for line in self.log if line.get("event") == event]
            if found:
                return found[0]
            await asyncio.sleep(0.1)
        raise AssertionError(f"no {event} line in {[line.get('event') for line in self.log]}")


@pytest.fixture
async def serve(tmp_path: Path) -> AsyncIterator[object]:
    """Start the README's `serve` with the environment given (the port too: 8400 may be taken)."""
    started: list[tuple[asyncio.subprocess.Process, asyncio.Task[None]]] = []

    async def start(**variables: str) -> Served:
        port = free_port()
        env = clean_environment(tmp_path, REPAIR_PROXY_PORT=str(port), REPAIR_PROXY_WORKERS="1", **variables)
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "proxy", *first_serve(), cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE
        )
        assert process.stdout is not None
        served = Served(port, process)
        started.append((process, asyncio.create_task(read_json_log(process.stdout, served.log))))
        await wait_healthy(port)
        return served

    yield start
    for process, reader in started:
        process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), 30)
        await reader


async def test_serve_on_the_embedded_defaults_passes_the_bytes_and_watches_in_shadow(
    serve: object, upstream: Upstream, tmp_path: Path
) -> None:
    """The upstream answers (said at start); an agent stuck on one failing test gets its reply, the
    upstream gets exactly the agent's bytes, and the failure model's pattern trips in shadow: in
    `X-Repair-Trips` and a `repair_trip` line with `"shadow": true`, as the first screen says."""
    served = await serve(REPAIR_PROXY_UPSTREAM=upstream.base_url)  # type: ignore[operator]
    answers = await served.logged("upstream_answers")
    assert answers["upstream"] == upstream.base_url
    upstream.reply_with(json_reply(CALL))
    bodies = stuck_requests()[:5]  # edits that change nothing between runs of one failing test
    trips = []
    async with aiohttp.ClientSession() as client:
        for body in bodies:
            url, headers = f"{served.base}/v1/chat/completions", {"Content-Type": "application/json"}
            async with client.post(url, data=body, headers=headers) as response:
                assert response.status == 200 and await response.read() == CALL
                trips.append(response.headers.get("X-Repair-Trips"))
    assert [seen.body for seen in upstream.seen] == bodies  # every byte as the agent sent it
    assert trips == [None, None, None, None, "stuck_same_diagnostic"]
    trip = await served.logged("repair_trip")
    assert trip["pattern"] == "stuck_same_diagnostic" and trip["shadow"] is True
    assert [line for line in served.log if line.get("level") == "warning"] == []
    assert (tmp_path / ".local" / "state" / "repair-proxy" / "verdicts.sqlite3").exists()  # the default store


def test_the_demo_tells_its_story_without_a_warning_line(tmp_path: Path) -> None:
    """Issue 63: the demo printed a JSON `event_loop_stall` warning in the middle of its story, every run."""
    done = cli("demo", env=clean_environment(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert [line for line in done.stdout.splitlines() if line.startswith("{") or "warning" in line.lower()] == []
    assert "TRIP stuck_same_diagnostic -> nudge" in done.stdout and "HAND-BACK" in done.stdout


def test_check_config_reads_the_environment(tmp_path: Path) -> None:
    """What the README tells Codex users to set, checked as `serve` would read it."""
    done = cli("check-config", env=clean_environment(tmp_path, REPAIR_PROXY_POLICY="codex"))
    assert done.returncode == 0, done.stderr
    assert "codex.toml" in done.stdout and "REPAIR_PROXY_POLICY" in done.stdout


async def test_a_dead_upstream_is_said_at_start_and_named_in_the_502_and_readyz(serve: object) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    served = await serve(REPAIR_PROXY_UPSTREAM=dead)  # type: ignore[operator]
    warning = await served.logged("upstream_not_answering")
    assert warning["level"] == "warning" and warning["upstream"] == dead and warning["cause"] == "refused"
    assert f"the upstream {dead} is unreachable" in str(warning["error"])
    assert "It was set by REPAIR_PROXY_UPSTREAM" in str(warning["error"])
    async with openai.AsyncOpenAI(base_url=f"{served.base}/v1", api_key="k", max_retries=0) as client:
        with pytest.raises(openai.InternalServerError) as caught:
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 502
    assert f"the upstream {dead} is unreachable: connection refused" in caught.value.message
    assert "--upstream, REPAIR_PROXY_UPSTREAM or upstream.base_url" in caught.value.message
    async with aiohttp.ClientSession() as client, client.get(f"{served.base}/readyz") as response:
        assert response.status == 503
        ready = await response.json()
    assert ready["upstream"] == dead and ready["cause"] == "refused" and dead in ready["error"]


async def test_a_path_it_does_not_serve_is_an_openai_shaped_404(serve: object, upstream: Upstream) -> None:
    served = await serve(REPAIR_PROXY_UPSTREAM=upstream.base_url)  # type: ignore[operator]
    async with aiohttp.ClientSession() as client, client.get(f"{served.base}/foo") as response:
        assert response.status == 404
        error = orjson.loads(await response.read())["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["code"] == "not_found"
    assert "/v1/" in error["message"]


def test_help_shows_serves_defaults_and_the_demo_as_it_is(tmp_path: Path) -> None:
    env = clean_environment(tmp_path)
    serve_help = cli("serve", "--help", env=env).stdout
    for default in ("127.0.0.1", "8400", "http://127.0.0.1:11434/v1", "REPAIR_PROXY_POLICY"):
        assert default in serve_help, default
    helps = cli("--help", env=env).stdout + cli("demo", "--help", env=env).stdout
    assert "unstuck" not in helps and "hand-back" in helps
