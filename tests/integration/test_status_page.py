"""The status page, rendered by a real headless Chromium, shows a stuck conversation's trip."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from chat import Chat, edit, test_run
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


async def test_status_page_shows_the_trip(make_proxy, upstream: Upstream, tmp_path: Path) -> None:
    """Drive a stuck conversation through the proxy; the page lists it, its failure and the trip where it fired."""
    browser = chromium()
    upstream.reply_with(json_reply(ACTING))
    proxy: TestServer = await make_proxy({"admin": {"tokens": [{"token": TOKEN, "teams": ["*"]}]}})
    chat = Chat()
    async with aiohttp.ClientSession() as client:
        for step in (test_run(), edit(), test_run("@pytest_addition_b"), edit("a", "b"), test_run()):
            async with client.post(str(proxy.make_url("/v1/chat/completions")), data=chat.turn(step).bytes()) as resp:
                conversation = resp.headers["X-Repair-Conversation"]
    url = str(proxy.make_url("/status")) + f"#token={TOKEN}&team=default"
    process = await asyncio.create_subprocess_exec(
        browser,
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
    page = dom.decode()
    assert f'data-conversation="{conversation}"' in page
    assert "stuck_same_diagnostic:nudge" in page
    assert "turn 5:" in page
    assert "streak <b>3</b>" in page
    assert page.count('class="turn fail') == 3
