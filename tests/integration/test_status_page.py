"""The status page, rendered by a real headless Chromium, shows a stuck conversation's trip."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from chat import Chat, edit, test_run, view
from support import Upstream, completion, json_reply

TOKEN = "status-page-admin-token-0123"
ACTING = completion(
    "", tool_calls=[{"id": "c", "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}]
)


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("Chromium is not installed (apt-get install chromium; scripts/test installs it)")
    return found


async def render(url: str, tmp_path: Path) -> str:
    """The page's DOM after its scripts ran, from a real headless Chromium."""
    process = await asyncio.create_subprocess_exec(
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    dom, _ = await asyncio.wait_for(process.communicate(), 60)
    return dom.decode()


async def test_status_page_shows_the_trip(make_proxy, upstream: Upstream, tmp_path: Path) -> None:
    """Drive a stuck conversation through the proxy; the page lists it, its failure, the trip
    where it fired with the text injected and what the model did next, and the team's trips
    by pattern as a chart."""
    chromium()
    upstream.reply_with(json_reply(ACTING))
    proxy: TestServer = await make_proxy({"admin": {"tokens": [{"token": TOKEN, "teams": ["*"]}]}})
    chat = Chat()
    async with aiohttp.ClientSession() as client:
        for step in (
            test_run(),
            edit(),
            test_run("@pytest_addition_b"),
            edit("a", "b"),
            test_run(),
            view("/workspace/tests/test_parse.py"),
        ):
            async with client.post(str(proxy.make_url("/v1/chat/completions")), data=chat.turn(step).bytes()) as resp:
                conversation = resp.headers["X-Repair-Conversation"]
    page = await render(str(proxy.make_url("/status")) + f"#token={TOKEN}&team=default", tmp_path)
    assert f'data-conversation="{conversation}"' in page
    assert "stuck_same_diagnostic:nudge" in page
    assert "turn 5:" in page
    assert "The same failure came back 3 times in a row" in page  # what was injected
    assert "then turn 6: read:str_replace_editor" in page  # what the model did next
    assert "trips by pattern" in page and 'class="bar' in page


async def test_without_a_token_the_page_says_how_to_get_one(make_proxy, tmp_path: Path) -> None:
    """No token in the address (or one the proxy refuses): the page explains the admin token
    setting instead of showing a raw 401."""
    chromium()
    proxy: TestServer = await make_proxy({"admin": {"tokens": [{"token": TOKEN, "teams": ["*"]}]}})
    for fragment in ("", "#token=not-the-token"):
        page = await render(str(proxy.make_url("/status")) + fragment, tmp_path)
        assert "[admin]" in page and "tokens = [{ token" in page
