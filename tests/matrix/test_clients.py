"""The client matrix: real agent clients, each in its own environment, through the real proxy.

For every client: with nothing to inject, what reached the model is byte for byte what the
client sent; on a run stuck on one failing test (the scripted model runs the check again and
again, the client's tool really runs it), the proxy's nudge reaches the model and its
hand-back reaches the client, which shows it to its user as the run's last word. Clients that
cannot be installed here (`scripts/clients.py`) are skipped, saying why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import clients
import pytest
from harness import PYTHON, Model, Tap, drive, driver, workdir
from support import policy_toml

STUCK_POLICY = {
    "patterns.stuck_same_diagnostic": {"after": 2, "action": "nudge", "escalate": [{"at": 3, "action": "halt"}]}
}
"""Nudge at the second identical failure, hand back at the third: a short stuck run."""

DRIVEN = {
    # client: (its environment in scripts/clients.py, or "" for this test environment; its driver
    # and arguments; the policy preset its users would choose, or "" for the default policy)
    "openai": ("", "openai_sdk", ""),
    "openai_agents_chat": ("", "openai_agents chat", ""),
    "openai_agents_responses": ("", "openai_agents responses", ""),
    "langchain": ("langchain", "langchain", ""),
    "litellm": ("litellm", "litellm_client", ""),
    "ollama": ("ollama", "ollama_client", ""),
    "smolagents": ("smolagents", "smolagents_client", ""),
    "mini_swe_agent": ("mini_swe_agent", "mini_swe_agent", "mini_swe_agent"),
    "aider": ("aider", "aider", ""),
    "codex": ("codex", "codex", "codex"),
    "claude_code": ("claude_code", "claude_code", "claude_code"),
}


def program_of(environment: str) -> tuple[str, list[str]]:
    """The interpreter that runs a client's driver, and the arguments it adds: an npm client's
    program is driven from this environment, its path handed to the driver."""
    if not environment:
        return PYTHON, []
    found = clients.executable(environment)
    if found is None:
        pytest.skip(f"the {environment} client is not installed here (run: python scripts/clients.py)")
    return (str(found), []) if found.name.startswith("python") else (PYTHON, [str(found)])


class Stack:
    def __init__(self, model: Model, tap: Tap, base: str) -> None:
        self.model, self.tap, self.base = model, tap, base

    def posts(self) -> tuple[list[Any], list[Any]]:
        """(what the client sent, what reached the model): POSTs only."""
        return [r for r in self.tap.seen if r.body], [r for r in self.model.seen if r.body]


@pytest.fixture
async def stacks(make_proxy, tmp_path: Path) -> Any:  # type: ignore[no-untyped-def]
    """Starts model, proxy (with the client's preset, stuck quickly) and tap for one client."""
    started: list[Stack] = []

    async def start(preset: str, verdicts: str = "") -> Stack:
        model = Model()
        model_url = await model.start()
        policy = tmp_path / "matrix.toml"
        policy.write_text((f'extends = "{preset}"\n' if preset else "") + policy_toml(STUCK_POLICY))
        proxy = await make_proxy({"store": {"verdicts": verdicts}}, upstream_url=model_url, policy=str(policy))
        tap = Tap(str(proxy.make_url("")))
        started.append(Stack(model, tap, await tap.start()))
        return started[-1]

    yield start
    for stack in started:
        await stack.tap.server.close()  # type: ignore[union-attr]
        await stack.model.server.close()  # type: ignore[union-attr]


async def run(
    stacks: Any, client: str, mode: str, tmp_path: Path, stack: Stack | None = None, repo: Path | None = None
) -> tuple[Stack, dict[str, Any]]:
    environment, name, preset = DRIVEN[client]
    interpreter, program = program_of(environment)
    stack = stack or await stacks(preset)
    name, *extra = name.split()
    command = [interpreter, driver(name), stack.base, mode, *extra, *program]
    return stack, await drive(command, repo or workdir(tmp_path), {})


@pytest.mark.parametrize("client", sorted(DRIVEN))
async def test_with_nothing_to_inject_the_model_gets_the_clients_bytes(
    stacks: Any, client: str, tmp_path: Path
) -> None:
    stack, result = await run(stacks, client, "plain", tmp_path)
    sent, received = stack.posts()
    assert sent, "the client sent nothing"
    assert [r.body for r in received] == [r.body for r in sent]
    assert "Hello" in result["shown"] or result.get("called"), "the client did not show the model's reply"


@pytest.mark.parametrize("client", sorted(DRIVEN))
async def test_a_stuck_run_is_nudged_and_the_client_shows_the_handback(
    stacks: Any, client: str, tmp_path: Path
) -> None:
    stack, result = await run(stacks, client, "stuck", tmp_path)
    _sent, received = stack.posts()
    assert any(b"[repair-proxy]" in r.body for r in received), "no nudge reached the model"
    assert "INCOMPLETE" in result["shown"], result["_stdout"][-2000:]
    assert "assert -1 == 5" in result["shown"], "the hand-back does not say what still fails"


async def test_codex_memory_follows_the_prompt_not_the_directory(stacks: Any, tmp_path: Path) -> None:
    """After a stuck Codex run in a directory, an unrelated `codex exec` there gets no note of
    it (Codex's `<environment_context>`, the same for both, is not the task); the same task run
    again does."""
    stack = await stacks("codex", verdicts=str(tmp_path / "verdicts.sqlite3"))
    repo = workdir(tmp_path)
    await run(stacks, "codex", "stuck", tmp_path, stack, repo)

    def noted() -> bool:
        return b"A previous attempt at this task stalled" in stack.model.seen[-1].body

    await run(stacks, "codex", "plain", tmp_path, stack, repo)
    assert not noted()
    await run(stacks, "codex", "stuck", tmp_path, stack, repo)
    assert any(b"A previous attempt at this task stalled" in r.body for r in stack.model.seen[-3:])
