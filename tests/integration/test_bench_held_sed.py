"""The held-sed probe (`bench/held_sed.py`) against a scripted model server on loopback: what it
asks for (the held call's schema, the `sed` pattern of the code), and how it counts a reply the
server read and one it failed (HTTP 500)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from support import Upstream, json_reply

from proxy.engine.writing.sed_script import SED_SCRIPT, held_script

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import held_sed

READ = json.dumps(
    {"choices": [{"message": {"role": "assistant", "content": json.dumps(
        {"name": "bash", "arguments": {"command": "sed -i 's/pop(0)/pop()/' stack.py"}}
    )}}]}
).encode()  # fmt: skip
UNREAD = b'{"error": {"code": 500, "message": "The model produced output that does not match the expected peg-native format"}}'


async def test_the_probe_asks_for_the_held_sed_and_counts_a_server_error_as_unread(upstream: Upstream) -> None:
    upstream.reply_with(json_reply(READ), json_reply(UNREAD, status=500))
    base = upstream.base_url.removesuffix("/v1")
    read = await asyncio.to_thread(held_sed.ask, base, 0)
    failed = await asyncio.to_thread(held_sed.ask, base, 1)
    assert read == (200, "sed -i 's/pop(0)/pop()/' stack.py")
    assert failed[0] == 500 and "peg-native" in failed[1]
    sent = json.loads(upstream.seen[0].body)
    schema = sent["response_format"]["json_schema"]["schema"]
    command = schema["properties"]["arguments"]["properties"]["command"]
    assert command == {"type": "string", "pattern": f"^sed -i '{SED_SCRIPT}' stack\\.py$"}
    assert (sent["seed"], json.loads(upstream.seen[1].body)["seed"]) == (0, 1)


async def test_the_probe_holds_the_text_to_replace_to_the_codes_lines_when_asked(upstream: Upstream) -> None:
    upstream.reply_with(json_reply(READ))
    await asyncio.to_thread(held_sed.ask, upstream.base_url.removesuffix("/v1"), 0, True)
    schema = json.loads(upstream.seen[0].body)["response_format"]["json_schema"]["schema"]
    pattern = schema["properties"]["arguments"]["properties"]["command"]["pattern"]
    assert (
        pattern == f"^sed -i '{held_script(held_sed.CODE)}' stack\\.py$"
        and "(item = )?self\\.)?items\\.)?pop\\(0\\)" in pattern
    )
