"""The corpus's local source (`bench/corpus/local.py`, `convert.source_local`): the recovery bench's
agent (`bench/tiny_agent.py`) really run against a scripted model server on 127.0.0.1, its record
written as `recovery.py --transcripts` writes it, then rebuilt into corpus requests: each request the
transcript as the agent sent it, each reply what the model answered, the agent's own complaint
after a reply with no call marked, the bench's grade as the label."""

from __future__ import annotations

import asyncio
import gzip
import json
import sys
from dataclasses import asdict
from pathlib import Path

import orjson
import pytest
from support import Upstream, completion, json_reply

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH / "corpus"))

import convert  # noqa: E402
import local  # noqa: E402
import tiny_agent  # noqa: E402

VIEW = '{"name": "str_replace_editor", "arguments": {"command": "view", "path": "%s"}}'
"""A call written as JSON text, as Qwen2.5-Coder-1.5B writes them (the agent reads it itself)."""


async def test_a_recorded_run_is_rebuilt_request_by_request(upstream: Upstream, tmp_path: Path) -> None:
    root = tiny_agent.copy_repo("trim", tmp_path)
    code = next(p for p in sorted(root.glob("*.py")) if not p.name.startswith("test_"))
    test_call = {"id": "c1", "type": "function", "function": {"name": "execute_bash", "arguments": json.dumps({"command": "python -m pytest"})}}  # fmt: skip
    upstream.reply_with(
        json_reply(completion(VIEW % code)),  # read from text by the agent
        json_reply(completion("I think the bug is in the loop.")),  # no call: the agent complains
        json_reply(completion("", tool_calls=[test_call])),  # a real call
    )
    messages = tiny_agent.start_messages(root, "openhands")
    run = await asyncio.to_thread(
        tiny_agent.run_agent, upstream.base_url, root, "openhands", messages, 3, 0, 0.7, None, 256, True
    )
    assert run.sent == [2, 4, 6] and [len(orjson.loads(s.body)["messages"]) for s in upstream.seen] == run.sent
    record = {"arm": "quiet", "start": "scratch", "repo": "trim", "style": "openhands", "seed": 0, "run": asdict(run)}
    path = tmp_path / "records.jsonl.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(orjson.dumps({"command": ["python", "bench/recovery.py"], "commit": "x"}) + b"\n")
        fh.write(orjson.dumps({**record, "transcript": messages}) + b"\n")
        fh.write(orjson.dumps({**record, "seed": 1}) + b"\n")  # no transcript kept: skipped

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(local, "RECORDS", path)
        (built,) = list(convert.source_local(Path("/nonexistent")))
    rec = built.record()
    assert (rec["source"], rec["run"], rec["resolved"], rec["protocol"]) == (local.SOURCE, "trim-openhands-scratch-0", False, "tools")  # fmt: skip
    assert [t["function"]["name"] for t in rec["tools"]] == [t["function"]["name"] for t in tiny_agent.OPENHANDS_TOOLS]
    pool = rec["pool"]
    for request, seen in zip(rec["requests"], upstream.seen, strict=True):
        sent = orjson.loads(seen.body)["messages"]
        assert [pool[i]["role"] for i in request["messages"]] == [m["role"] for m in sent]
        assert [pool[i].get("content") for i in request["messages"]] == [m.get("content") for m in sent]
    replies = [pool[r["reply"]] for r in rec["requests"]]
    assert replies[0]["tool_calls"][0]["function"]["name"] == "str_replace_editor"  # the call the agent read
    assert replies[1]["content"] == "I think the bug is in the loop." and "tool_calls" not in replies[1]
    assert replies[2]["tool_calls"][0]["function"]["arguments"] == test_call["function"]["arguments"]
    assert [pool[i]["content"] for i in rec["complaints"]] == [tiny_agent.NUDGE["openhands"]]
    assert "start scratch, seed 0" in rec["notes"]


def test_no_records_no_runs(tmp_path: Path) -> None:
    assert list(local.runs(tmp_path / "absent.jsonl.gz")) == []
