"""The corpus's local source: the recovery bench's own model on its test repositories, unhelped.

`bench/recovery.py --part test --arms quiet --transcripts --out FILE` runs `bench/tiny_agent.py`
against Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, llama.cpp's `llama-server`, `scripts/real_model.py`)
through the proxy with its request side silent (every pattern in shadow, no block rung, no finish
or done gate, no failure model) and its reply side on: salvage makes the calls the model writes as
text real, and the action gate asks again, once, for a reply with no call, naming no step the
failure model would (with the failure model on, the model's answers to those retries were the
proxy's own next steps, and judging a pattern's "not what the agent did next" on them measured the
proxy against itself: `bench/records/corpus-local/steered-trial-*`, kept out of the corpus). What
the agent keeps is the model's own course, its calls made real; nothing a pattern would say reaches
it. (The model alone, the agent reading JSON text itself, is no trajectory to measure: 29 of its 30
replies were prose in a `<tool_response>` shape no reader takes, seed 20, countdown, both starts.) Each record keeps the
run's whole transcript and how many of its messages each request carried (`run.sent`): the agent
only appends, so request i is the transcript's first `sent[i]` messages and its reply the message
after them. The records, gzipped, are committed under `bench/corpus/local/`; `convert.py`'s
`source_local` turns them into corpus runs.

Labels are the bench's own grade (`tiny_agent.grade`): resolved when the repository's tests pass
and its hidden checks do too; a run that made its tests pass and failed the hidden checks (gamed) is
unresolved. The agent's own complaint after a reply with no call (`tiny_agent.NUDGE`) is marked as
a complaint, as the public sources' agents' are.

A run of the `stuck` start opens on the bench's scripted stuck point (the failing test, two edits
that change nothing that matters, the same failure three times: `tiny_agent.stuck_start`), which
the model did not write: its trips on the first request judge that script, not the model; the
run's notes say which start it is.
"""

from __future__ import annotations

import gzip
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
RECORDS = HERE / "local" / "qwen-tinyagent-test.jsonl.gz"
SOURCE = "qwen-tinyagent-local"
MODEL = "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama.cpp llama-server, local)"
SCAFFOLD = {
    "openhands": "tiny-agent (editor + shell tools)",
    "bash": "tiny-agent (one bash tool)",
    "sweagent": "tiny-agent (SWE-agent 0.x viewer and editor commands in one bash tool)",
}
"""None starts with a name `bench/trajectories.py` maps to a preset: replayed on the defaults,
as the recovery bench's proxies run."""

ORIGIN: dict[str, Any] = {
    "repository": None,
    "part": "test",
    "data_commit": None,
    "data_commit_note": "this repository's own runs, committed with the records (bench/corpus/local/)",
    "paths": ["bench/corpus/local/qwen-tinyagent-test.jsonl.gz (bench/recovery.py --arms quiet --transcripts)"],
    "licence": "this project's own data",
    "licence_file": None,
    "scaffold_version": "bench/tiny_agent.py (OpenHands-style editor + shell, one bash tool, or SWE-agent 0.x commands in one)",
    "benchmark": "the recovery bench's test repositories (bench/repos, stuck.json part test)",
    "label_source": "tiny_agent.grade: the repository's tests and hidden checks both pass",
    "selection": "every run of the recorded bench invocation (its first line names the command and commit)",
}


def _tiny_agent() -> Any:
    """`bench/tiny_agent.py`, for its tool schemas and complaint wording (one definition); imported
    only when there are records to read (it needs the project's environment: `openai`)."""
    sys.path.insert(0, str(HERE.parent))
    import tiny_agent  # noqa: PLC0415

    return tiny_agent


class Recorded:
    """One recorded run, read for the corpus: its key, style, label, transcript (chat messages),
    per-request message counts, tool schemas, complaint wording and notes."""

    def __init__(self, record: dict[str, Any], agent: Any) -> None:
        graded = record["run"]
        self.style: str = record["style"]
        self.key = f"{record['repo']}-{self.style}-{record['start']}-{record['seed']}"
        self.scaffold = SCAFFOLD[self.style]
        self.resolved = bool(graded["solved"])
        self.transcript: list[dict[str, Any]] = record["transcript"]
        self.sent: list[int] = graded.get("sent", [])
        self.tools: list[dict[str, Any]] = agent.TOOLS[self.style]
        self.complaint: str = agent.NUDGE[self.style]
        self.notes = [f"start {record['start']}, seed {record['seed']}, ended {graded['end']}"]
        if graded["tests"] and not graded["solved"]:
            self.notes.append("gamed: its tests pass, its hidden checks do not")


def runs(path: Path | None = None) -> Iterator[Recorded]:
    """Each recorded run that kept its transcript (the header line, and records without one, are
    skipped); nothing when no records are committed. `path`: `RECORDS`."""
    path = path or RECORDS
    if not path.exists():
        return
    agent = _tiny_agent()
    with gzip.open(path, "rb") as fh:
        for line in fh:
            record = orjson.loads(line)
            if "transcript" in record and "run" in record:
                yield Recorded(record, agent)
