"""Build the real-trajectory corpus from public git snapshots.

Reads agent trajectories that public repositories committed to git (fetched as bare
snapshots under ``/work/.mirror/<owner>+<name>/repo``), reconstructs every chat request
each agent sent to its model, and writes one gzipped JSON-lines file per source to
``bench/corpus/data/<source>.jsonl.gz`` (git-ignored). One line is one run:

    {"source", "part", "run", "scaffold", "model", "protocol", "resolved", "tools",
     "pool": [message, ...],
     "requests": [{"messages": [pool index, ...], "reply": pool index | null}, ...],
     "complaints": [pool index, ...], "notes"}

Messages are OpenAI chat-completions messages (``role``, ``content``, optional
``tool_calls`` / ``tool_call_id``); every distinct message is stored once in ``pool``.
``complaints`` are the pool indices of the agent's own format-error messages (the model's reply
before made no valid call), as each scaffold's code tells them apart.
How each scaffold's requests are rebuilt, and what is lossy, is in README.md next to
this file. Run selection is deterministic (sorted instance ids, fixed strides).

Usage: ``python bench/corpus/convert.py [--mirror /work/.mirror] [--out bench/corpus/data]``.
It prints a summary and exits non-zero, naming the ``fetch`` needed, when a snapshot
is missing.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import local
import orjson

Json = dict[str, Any]

HERE = Path(__file__).resolve().parent
DEFAULT_MIRROR = Path("/work/.mirror")


class MissingSnapshot(RuntimeError):
    """A snapshot, or a commit inside it, is not on this machine."""


# --------------------------------------------------------------------------- git access


@dataclass(frozen=True)
class Snapshot:
    """A bare git snapshot fetched with the search tool's ``fetch``."""

    repo: str  # owner/name
    mirror: Path

    @property
    def git_dir(self) -> Path:
        return self.mirror / self.repo.replace("/", "+") / "repo"

    def _git(self, *args: str) -> bytes:
        proc = subprocess.run(["git", f"--git-dir={self.git_dir}", *args], capture_output=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} failed in {self.git_dir}: {proc.stderr.decode()[:300]}")
        return proc.stdout

    def require(self, rev: str) -> str:
        """Resolve ``rev`` to a sha, or raise MissingSnapshot naming the fetch needed."""
        if not self.git_dir.is_dir():
            raise MissingSnapshot(
                f"snapshot of {self.repo} is missing at {self.git_dir}; run the search tool's "
                f"fetch with source 'github:{self.repo}' first"
            )
        proc = subprocess.run(
            ["git", f"--git-dir={self.git_dir}", "rev-parse", "--verify", f"{rev}^{{commit}}"],
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0:
            raise MissingSnapshot(
                f"{self.repo}: revision {rev} is not in the snapshot at {self.git_dir}; "
                f"fetch 'github:{self.repo}' again (a newer snapshot may have dropped it)"
            )
        return proc.stdout.decode().strip()

    def head(self) -> str:
        return self._git("rev-parse", "HEAD").decode().strip()

    def ls(self, rev: str, path: str) -> list[str]:
        out = self._git("ls-tree", "-r", "--name-only", rev, "--", path).decode()
        return sorted(line for line in out.splitlines() if line)

    def read(self, rev: str, path: str) -> bytes | None:
        """A blob's bytes, or None when the snapshot lacks the object (large blobs can be absent)."""
        proc = subprocess.run(
            ["git", f"--git-dir={self.git_dir}", "cat-file", "blob", f"{rev}:{path}"],
            capture_output=True,
            check=False,
        )
        return proc.stdout if proc.returncode == 0 else None

    def has(self, rev: str, path: str) -> bool:
        """Whether the blob at ``rev:path`` is in the snapshot (large blobs can be absent)."""
        proc = subprocess.run(
            ["git", f"--git-dir={self.git_dir}", "cat-file", "-e", f"{rev}:{path}"], capture_output=True, check=False
        )
        return proc.returncode == 0

    def read_json(self, rev: str, path: str) -> Any:
        blob = self.read(rev, path)
        return None if blob is None else orjson.loads(blob)

    def ls_blobs(self, rev: str, path: str) -> dict[str, str]:
        """Every file under ``path`` at ``rev`` with its blob id (the blob itself may be absent)."""
        out = self._git("ls-tree", "-r", rev, "--", path).decode()
        blobs: dict[str, str] = {}
        for line in out.splitlines():
            meta, _, name = line.partition("\t")
            blobs[name] = meta.split()[2]
        return blobs

    def read_blobs(self, blob_ids: list[str]) -> Iterator[bytes | None]:
        """The blobs' bytes in order (None where the snapshot lacks one), through one
        ``git cat-file --batch`` process: many small files without a process each."""
        proc = subprocess.Popen(
            ["git", f"--git-dir={self.git_dir}", "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            for blob_id in blob_ids:
                proc.stdin.write(blob_id.encode() + b"\n")
                proc.stdin.flush()
                header = proc.stdout.readline().split()
                if len(header) < 3 or header[1] != b"blob":
                    yield None
                    continue
                data = proc.stdout.read(int(header[2]))
                proc.stdout.read(1)  # the newline after each object
                yield data
        finally:
            proc.stdin.close()
            proc.wait()


# --------------------------------------------------------------------------- run building


def _canon(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


@dataclass
class RunBuilder:
    """Collects the distinct messages of one run and its requests as pool indices."""

    source: str
    run: str
    scaffold: str
    model: str
    protocol: str
    resolved: bool | None
    tools: list[Json] | None = None
    part: str = "tune"  # "tune" (rules are tuned on it) or "test" (held out); set from the source's origin
    pool: list[Json] = field(default_factory=list)
    requests: list[Json] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    format_errors: int = 0
    _index: dict[bytes, int] = field(default_factory=dict)
    _complaints: set[bytes] = field(default_factory=set)

    def add(self, message: Json) -> int:
        key = _canon(message)
        if key not in self._index:
            self._index[key] = len(self.pool)
            self.pool.append(message)
        return self._index[key]

    def request(self, messages: list[Json], reply: Json | None) -> None:
        self.requests.append(
            {
                "messages": [self.add(m) for m in messages],
                "reply": None if reply is None else self.add(reply),
            }
        )

    def complaint(self, message: Json) -> None:
        """Mark ``message`` as the agent's own complaint that the model's reply before it made no
        valid call (or had the wrong format): not a valid call's tool error, not a limit or context
        note. Resolved to its pool index when the record is written; a message no request carries
        (the run ended after it) is in no pool, so nothing is marked."""
        self._complaints.add(_canon(message))

    def record(self) -> Json:
        complaints = sorted(self._index[key] for key in self._complaints if key in self._index)
        return {
            "source": self.source,
            "part": self.part,
            "run": self.run,
            "scaffold": self.scaffold,
            "model": self.model,
            "protocol": self.protocol,
            "resolved": self.resolved,
            "tools": self.tools,
            "pool": self.pool,
            "requests": self.requests,
            "complaints": complaints,
            "notes": "; ".join(self.notes),
        }


def openai_tool_calls(calls: list[Json] | None) -> list[Json] | None:
    """Tool calls in request shape: id, type, function{name, arguments}; drops streaming ``index``."""
    if not calls:
        return None
    out = []
    for call in calls:
        fn = call.get("function") or {}
        args = fn.get("arguments")
        out.append(
            {
                "id": call.get("id"),
                "type": call.get("type") or "function",
                "function": {
                    "name": fn.get("name"),
                    "arguments": args if isinstance(args, str) else orjson.dumps(args).decode(),
                },
            }
        )
    return out


def strip_cache_control(content: Any) -> Any:
    """Content parts without Anthropic ``cache_control`` markers (text kept verbatim)."""
    if isinstance(content, list):
        return [{k: v for k, v in part.items() if k != "cache_control"} for part in content]
    return content


def chat_message(raw: Json) -> Json:
    """An OpenAI chat message from a logged one: role, content, tool_calls, tool_call_id only."""
    msg: Json = {"role": raw["role"], "content": strip_cache_control(raw.get("content"))}
    calls = openai_tool_calls(raw.get("tool_calls"))
    if calls:
        msg["tool_calls"] = calls
    if raw.get("tool_call_id") is not None:
        msg["tool_call_id"] = raw["tool_call_id"]
    if raw.get("role") == "assistant" and raw.get("reasoning_content"):
        msg["reasoning_content"] = raw["reasoning_content"]  # DeepSeek extension, sent back by the agent
    return msg


def balanced(ids: list[str], labels: Mapping[str, bool | None], per_class: int) -> list[str]:
    """Deterministic pick: up to ``per_class`` resolved and unresolved ids by a fixed stride."""
    picked: list[str] = []
    for want in (True, False):
        group = sorted(i for i in ids if labels.get(i) is want)
        if len(group) <= per_class:
            picked += group
            continue
        stride = len(group) / per_class
        picked += [group[int(k * stride)] for k in range(per_class)]
    return sorted(picked)


# --------------------------------------------------------------------------- source: OpenHands


OH_REPO = "All-Hands-AI/OpenHands"
OH_COMMIT = "4ce8594d56a8a09b6c12d6dfd6fe746e825be644"
OH_DIR = (
    "evaluation/evaluation_outputs/outputs/princeton-nlp__SWE-bench_Verified-test/CodeActAgent/"
    "claude-3-5-sonnet-20241022_maxiter_50_N_v0.15.0-no-hint-no-condensation-run_1"
)


def openhands_labels(report_md: str) -> dict[str, bool]:
    """Resolved/unresolved ids from the run's output.swebench_eval.md sections."""
    labels: dict[str, bool] = {}
    section = ""
    for line in report_md.splitlines():
        if line.startswith("## "):
            section = line[3:].strip().lower()
            continue
        m = re.match(r"- \[([^\]]+)\]", line)
        if not m:
            continue
        if section == "resolved instances":
            labels[m.group(1)] = True
        elif section in ("unresolved instances", "error instances", "empty patch instances"):
            labels.setdefault(m.group(1), False)
    return labels


def source_openhands(mirror: Path) -> Iterator[RunBuilder]:
    snap = Snapshot(OH_REPO, mirror)
    rev = snap.require(OH_COMMIT)
    report = snap.read(rev, f"{OH_DIR}/output.swebench_eval.md")
    meta = snap.read_json(rev, f"{OH_DIR}/metadata.json")
    if report is None or meta is None:
        raise MissingSnapshot(f"{OH_REPO}@{OH_COMMIT}: report or metadata blob absent from the snapshot")
    labels = openhands_labels(report.decode())
    model = meta["llm_config"]["model"]
    files = snap.ls(rev, f"{OH_DIR}/llm_completions")
    by_run: dict[str, list[str]] = {}
    for path in files:
        by_run.setdefault(path.split("/")[-2], []).append(path)

    def stamp(path: str) -> float:
        return float(path.rsplit("-", 1)[1].removesuffix(".json"))

    for run in sorted(by_run):
        calls = [snap.read_json(rev, p) for p in sorted(by_run[run], key=stamp)]
        yield openhands_run(run, model, labels.get(run), calls)


def openhands_run(run: str, model: str, resolved: bool | None, calls: list[Json | None]) -> RunBuilder:
    """One run from its logged completions, in time order (None = log absent from the snapshot)."""
    b = RunBuilder(
        source="openhands-codeact-v0.15-verified50",
        run=run,
        scaffold="openhands-codeact-0.15",
        model=model,
        protocol="tools",
        resolved=resolved,
    )
    prev_reply_had_calls: bool | None = None
    tool_sets: set[bytes] = set()
    for call in calls:
        if call is None:
            continue
        tools = (call.get("kwargs") or {}).get("tools")
        if tools is not None:
            tool_sets.add(_canon(tools))
            b.tools = b.tools if b.tools is not None else tools
        messages = [chat_message(m) for m in call["messages"]]
        reply = chat_message({**call["response"]["choices"][0]["message"], "role": "assistant"})
        if prev_reply_had_calls is False and messages and messages[-1]["role"] == "user":
            b.format_errors += 1  # the model answered without a tool call; the agent sent a user nudge
            b.complaint(messages[-1])
        b.request(messages, reply)
        prev_reply_had_calls = bool(reply.get("tool_calls"))
    b.notes.append(
        "requests are the logged llm_completions (exact messages sent); cache_control markers, "
        "tool-message 'name' and tool-call 'index' fields dropped; content kept as the list of text parts sent"
    )
    if len(tool_sets) > 1:
        b.notes.append(f"tools schema changed across requests ({len(tool_sets)} variants); first kept")
    if missing := sum(c is None for c in calls):
        b.notes.append(f"{missing} completion log(s) absent from the snapshot")
    if b.format_errors:
        b.notes.append(f"{b.format_errors} reply(ies) without a tool call followed by a user nudge")
    return b


# --------------------------------------------------------------------------- source: mini-swe-agent 2.x


def trajectories(snap: Snapshot, rev: str, folder: str) -> Iterator[tuple[str, Json]]:
    """mini-swe-agent's `<folder>/<instance>/<instance>.traj.json`, as (instance, trajectory),
    those whose blob is in the snapshot."""
    for path in snap.ls(rev, folder):
        if path.endswith(".traj.json") and (traj := snap.read_json(rev, path)) is not None:
            yield path.split("/")[-2], traj


MSWEA_REPO = "SWE-agent/mini-swe-agent"
MSWEA_REF = "e5e0fbca1c60561bde25fa473b78717aa4b3f9ec"  # refs/pull/816/head
MSWEA_SUBSETS: list[tuple[str, str, str | None]] = [
    # (source id, output folder, swebench report json at the ref root)
    (
        "mswea2-pr816-deepseek-chat-lite-test",
        "deepseek_chat_test_1-100",
        "deepseek__deepseek-chat.deepseek_chat_test_1-100.json",
    ),
    ("mswea2-pr816-deepseek-chat-lite-dev", "deepseek_chat_dev", "deepseek__deepseek-chat.deepseek_chat_dev.json"),
    (
        "mswea2-pr816-deepseek-chat-lite-dev-rerun",
        "deepseek_chat_dev_rerun",
        "deepseek__deepseek-chat.deepseek_chat_dev_rerun.json",
    ),
    (
        "mswea2-pr816-deepseek-chat-lite-dev-noparallel",
        "deepseek_lite_dev_noparallel",
        "deepseek__deepseek-chat.deepseek_lite_dev_noparallel.json",
    ),
    ("mswea2-pr816-deepseek-reasoner-lite-dev", "deepseek_reasoner_dev", None),
]


def mswea_bash_tool(snap: Snapshot, rev: str) -> list[Json]:
    """The ``BASH_TOOL`` schema literal as defined in the snapshot's own source at ``rev``."""
    src = snap.read(rev, "src/minisweagent/models/utils/actions_toolcall.py")
    if src is None:
        raise MissingSnapshot(f"{MSWEA_REPO}@{rev}: actions_toolcall.py absent")
    for node in ast.parse(src.decode()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "BASH_TOOL" for t in node.targets):
            return [ast.literal_eval(node.value)]
    raise RuntimeError("BASH_TOOL not found in actions_toolcall.py")


def mswea2_history(b: RunBuilder, traj: Json) -> tuple[list[Json], int]:
    """A mini-swe-agent 2.x trajectory's requests into `b`; its history at the end, and the replies it
    recorded, counted. The agent sends its whole history (minus each message's `extra`, the `exit`
    message skipped) before each reply. A reply it could not parse (no call, or two) never joins the history; the user
    message that says so does (`extra.interrupt_type` FormatError, marked as the agent's complaint):
    that request's reply is the unparsed one where the message keeps it (`extra.model_response`, the
    text-based model's), else null (tool calls: lost)."""
    history: list[Json] = []
    replies = 0
    for raw in traj["messages"]:
        role, extra = raw.get("role"), raw.get("extra") or {}
        if role == "exit":
            continue
        msg = chat_message(raw)
        if role == "assistant":
            b.request(list(history), msg)
            replies += 1
        elif role == "user" and extra.get("interrupt_type") == MSWEA2_FORMAT_ERROR:
            lost = extra.get("model_response")
            b.request(list(history), {"role": "assistant", "content": lost} if isinstance(lost, str) else None)
            b.format_errors += 1
            b.complaint(msg)
        history.append(msg)
    return history, replies


MSWEA2_FORMAT_ERROR = "FormatError"


def mswea2_run(source: str, run: str, traj: Json, resolved: bool | None, tools: list[Json]) -> RunBuilder:
    info = traj["info"]
    model = info["config"]["model"]["model_name"]
    b = RunBuilder(
        source=source,
        run=run,
        scaffold="mini-swe-agent-2",
        model=model,
        protocol="tools",
        resolved=resolved,
        tools=tools,
    )
    history, n_assistant = mswea2_history(b, traj)
    api_calls = int((info.get("model_stats") or {}).get("api_calls") or 0)
    unexplained = api_calls - n_assistant - b.format_errors
    status = info.get("exit_status") or ""
    if unexplained > 0 and status not in ("Submitted", "LimitsExceeded"):
        b.request(list(history), None)
        b.notes.append(f"run ended with {status}: final request's reply was never received (reply null)")
        unexplained -= 1
    if unexplained:
        b.notes.append(f"api_calls exceeds reconstructed requests by {unexplained}")
    b.notes.append(
        "history replayed as sent (all messages minus the 'extra' field, exit message skipped); "
        "assistant function_call/provider_specific_fields dropped, reasoning_content kept when present"
    )
    if b.format_errors:
        b.notes.append(
            f"{b.format_errors} format error(s): the invalid reply is lost (request reply=null), "
            "the next request carries only the user error message"
        )
    return b


def source_mswea2(mirror: Path) -> Iterator[RunBuilder]:
    snap = Snapshot(MSWEA_REPO, mirror)
    rev = snap.require(MSWEA_REF)
    tools = mswea_bash_tool(snap, rev)
    for source, folder, report_path in MSWEA_SUBSETS:
        labels: dict[str, bool] = {}
        if report_path:
            report = snap.read_json(rev, report_path)
            if report is None:
                raise MissingSnapshot(f"{MSWEA_REPO}@{rev}: {report_path} absent")
            labels |= {i: True for i in report.get("resolved_ids", [])}
            labels |= {i: False for i in report.get("unresolved_ids", []) + report.get("empty_patch_ids", [])}
        for run, traj in trajectories(snap, rev, f"output/{folder}"):
            b = mswea2_run(source, run, traj, labels.get(run) if report_path else None, tools)
            if len(b.requests) < 2:
                continue  # died before the model was asked twice: nothing to read
            if not report_path:
                b.notes.append("no evaluation report for this subset in the source (resolved null)")
            yield b


# --------------------------------------------------------------------------- source: mini-swe-agent 1.x


MSWEA1_REPO = "wudi-alex/mini-swe-agent-CaM"
MSWEA1_COMMIT = "fae95e425f7ab1e3cfbb3eea3f784515fdcc208f"
MSWEA1_RUNS: list[tuple[str, str, str]] = [
    # (source id, run folder under run_results/, swebench report in it); the fork's stock agent
    # (minisweagent.run.extra.swebench) only, not its own prompt variants
    ("mswea1-cam-gpt5-nano", "nano-output", "openai__gpt-5-nano.nano_eval.json"),
    ("mswea1-cam-gpt5-mini", "mini-output", "openai__gpt-5-mini.mini_eval.json"),
    ("mswea1-cam-gpt5-mini-high", "mini-reasoning-high-res-api", "openai__gpt-5-mini.mini_h_reasoning_eval.json"),
    (
        "mswea1-cam-gpt5-mini-minimal",
        "mini-reasoning-minimal-res-api",
        "openai__gpt-5-mini.mini_minimal_reasoning_eval.json",
    ),
]
MSWEA1_FORMAT_ERROR = "Please always provide EXACTLY ONE action"
"""How mini-swe-agent 1.x's format_error_template begins (config/extra/swebench.yaml)."""


def mswea1_run(source: str, run: str, traj: Json, resolved: bool | None) -> RunBuilder:
    """mini-swe-agent 1.x keeps every reply in its history, a format error's too (the agent's
    complaint follows it as a user message): each request is the history before a reply."""
    info = traj["info"]
    b = RunBuilder(
        source=source,
        run=run,
        scaffold="mini-swe-agent-1",
        model=info["config"]["model"]["model_name"],
        protocol="text",
        resolved=resolved,
    )
    history: list[Json] = []
    for raw in traj["messages"]:
        msg = chat_message(raw)
        if raw.get("role") == "assistant":
            b.request(list(history), msg)
        elif raw.get("role") == "user" and str(raw.get("content") or "").startswith(MSWEA1_FORMAT_ERROR):
            b.format_errors += 1
            b.complaint(msg)
        history.append(msg)
    b.notes.append(
        f"mini-swe-agent {info.get('mini_version')}, text protocol (one ```bash block, <returncode> results); "
        f"exit {info.get('exit_status')}"
    )
    return b


def source_mswea1(mirror: Path) -> Iterator[RunBuilder]:
    snap = Snapshot(MSWEA1_REPO, mirror)
    rev = snap.require(MSWEA1_COMMIT)
    for source, folder, report_path in MSWEA1_RUNS:
        report = snap.read_json(rev, f"run_results/{folder}/{report_path}")
        if report is None:
            raise MissingSnapshot(f"{MSWEA1_REPO}@{rev}: run_results/{folder}/{report_path} absent")
        labels = msb_labels(report)  # the same harness report's keys
        for run, traj in trajectories(snap, rev, f"run_results/{folder}"):
            b = mswea1_run(source, run, traj, labels.get(run))
            if len(b.requests) < 2:
                continue
            if run not in labels:
                b.notes.append("instance not in the run's swebench report (resolved null)")
            yield b


# --------------------------------------------------------------------------- source: CodeR


CODER_REPO = "NL2Code/CodeR"
CODER_COMMIT = "d63468344bc215bbabb8f0c1ba4af24897a946df"
CODER_PER_CLASS = 60
CODER_MODEL = "gpt-4-turbo (not named in the source; inferred from its cost accounting)"


def coder_labels(snap: Snapshot, rev: str) -> dict[str, bool]:
    raw = snap.read(rev, "results.json")
    if raw is None:
        raise MissingSnapshot(f"{CODER_REPO}@{rev}: results.json absent")
    text = re.sub(rb",(\s*[\]}])", rb"\1", raw)  # the file has trailing commas
    res = orjson.loads(text)
    labels = {i: False for key in ("generated", "no_generation") for i in res.get(key, [])}
    labels |= {i: True for i in res.get("resolved", [])}
    return labels


def coder_run(run: str, traj: Json, resolved: bool | None) -> RunBuilder:
    b = RunBuilder(
        source="coder-sweagent0-gpt4-lite",
        run=run,
        scaffold="coder-multiagent (swe-agent-0.x text)",
        model=CODER_MODEL,
        protocol="text",
        resolved=resolved,
    )
    per_agent: dict[str, list[Json]] = {}
    agents: list[str] = []
    n_assistant = 0
    for entry in traj["history"]:
        agent = entry.get("agent") or "main"
        if agent not in per_agent:
            per_agent[agent] = []
            agents.append(agent)
        msg = {"role": entry["role"], "content": entry["content"]}
        if entry["role"] == "assistant":
            b.request(list(per_agent[agent]), msg)
            n_assistant += 1
        per_agent[agent].append(msg)
    api_calls = int((traj.get("info", {}).get("model_stats") or {}).get("api_calls") or 0)
    hidden = api_calls - n_assistant
    b.format_errors = max(hidden, 0)
    b.notes.append(
        f"multi-agent: each role ({', '.join(agents)}) keeps its own conversation; a request is that role's "
        "history so far (DefaultHistoryProcessor = identity; the is_demo user message is part of it)"
    )
    if hidden > 0:
        b.notes.append(
            f"{hidden} model call(s) not in the history (SWE-agent-0.x requeries for format errors/blocked "
            "actions use a temporary history and are not saved): not reconstructable"
        )
    return b


def source_coder(mirror: Path) -> Iterator[RunBuilder]:
    snap = Snapshot(CODER_REPO, mirror)
    rev = snap.require(CODER_COMMIT)
    labels = coder_labels(snap, rev)
    paths = {p.split("/")[-1].removesuffix(".traj"): p for p in snap.ls(rev, "trajs") if p.endswith(".traj")}
    for run in balanced(list(paths), labels, CODER_PER_CLASS):
        traj = snap.read_json(rev, paths[run])
        if traj is None:
            continue
        yield coder_run(run, traj, labels.get(run))


# --------------------------------------------------------------------------- source: SWE-agent 0.x (Multi-SWE-bench)


MSB_REPO = "multi-swe-bench/experiments"
MSB_COMMIT = "89888f1604001fcd80b0799a37af42a1bfebfd8f"
MSB_DIR = "evaluation/java/verified"
MSB_RUNS: list[tuple[str, str]] = [
    # (source id, run folder under MSB_DIR)
    ("sweagent0-msb-java-gpt-4o", "20240825_SWE-agent_gpt-4o-2024-05-13"),
    ("sweagent0-msb-java-gpt-4o-mini", "20240825_SWE-agent_gpt-4o-mini-2024-07-18"),
    ("sweagent0-msb-java-deepseek-chat-v2", "20240825_SWE-agent_deepseek-chat-v2"),
    ("sweagent0-msb-java-deepseek-coder-v2", "20240825_SWE-agent_deepseek-coder-v2"),
    ("sweagent0-msb-java-doubao-pro-128k", "20240825_SWE-agent_doubao-pro-128k"),
]
MSB_KEEP_OBSERVATIONS = 5
"""SWE-agent 0.x ``config/default.yaml`` (the config these runs' prompts match): ``Last5Observations``."""
MSB_NO_REPLY_ACTIONS = ("exit_cost", "exit_context", "exit_api", "exit_error")
"""Actions SWE-agent 0.x records when the model call failed or its answer was discarded: the
history gets a placeholder assistant entry ("Exit due to cost limit", ...), not a model reply."""


def msb_labels(results: Json) -> dict[str, bool]:
    """Resolved/unresolved ids from a Multi-SWE-bench ``results/results.json`` (harness report)."""
    labels = {i: False for key in ("unresolved_ids", "empty_patch_ids", "error_ids") for i in results.get(key) or []}
    labels |= {i: True for i in results.get("resolved") or results.get("resolved_ids") or []}
    return labels


def last_n_observations(history: list[Json], n: int) -> list[Json]:
    """SWE-agent 0.x ``last_n_history``: every non-demo user message except the first and the
    last ``n`` is replaced by ``Old output omitted (<k> lines)``; other entries pass unchanged."""
    users = sum(1 for e in history if e["role"] == "user" and not e.get("is_demo", False))
    out: list[Json] = []
    seen = 0
    for entry in history:
        if entry["role"] != "user" or entry.get("is_demo", False):
            out.append(entry)
            continue
        seen += 1
        if seen == 1 or users - n + 1 <= seen <= users:
            out.append(entry)
        else:
            out.append({**entry, "content": f"Old output omitted ({len(entry['content'].splitlines())} lines)"})
    return out


def msb_run(source: str, run: str, model: str, traj: Json, resolved: bool | None) -> RunBuilder:
    b = RunBuilder(
        source=source,
        run=run,
        scaffold="swe-agent-0.x (multi-swe-bench java)",
        model=model,
        protocol="text",
        resolved=resolved,
    )
    history: list[Json] = []
    n_assistant = placeholders = 0
    for entry in traj["history"]:
        if entry["role"] == "assistant":
            sent = [
                {"role": e["role"], "content": e["content"]}
                for e in last_n_observations(history, MSB_KEEP_OBSERVATIONS)
            ]
            if entry.get("action") in MSB_NO_REPLY_ACTIONS:
                b.request(sent, None)  # the call was made, its answer dropped (e.g. over the cost limit)
                placeholders += 1
            else:
                b.request(sent, {"role": "assistant", "content": entry["content"]})
            n_assistant += 1
        history.append(entry)
    info = traj.get("info") or {}
    api_calls = int((info.get("model_stats") or {}).get("api_calls") or 0)
    hidden = api_calls - n_assistant
    b.format_errors = max(hidden, 0)
    b.notes.append(
        "single agent; a request is the history before each assistant entry with Last5Observations applied "
        "(older observations sent as 'Old output omitted (<k> lines)'; the is_demo user message kept), role/content only"
    )
    if placeholders:
        b.notes.append(
            f"run ended with {info.get('exit_status')}: the last call's answer was discarded by the agent (reply null)"
        )
    if hidden > 0:
        b.notes.append(
            f"{hidden} model call(s) not in the history (SWE-agent-0.x requeries for format errors/blocked "
            "actions use a temporary history and are not saved): not reconstructable"
        )
    return b


def source_msb(mirror: Path) -> Iterator[RunBuilder]:
    snap = Snapshot(MSB_REPO, mirror)
    rev = snap.require(MSB_COMMIT)
    for source, folder in MSB_RUNS:
        base = f"{MSB_DIR}/{folder}"
        results = snap.read_json(rev, f"{base}/results/results.json")
        meta = snap.read(rev, f"{base}/metadata.yaml")
        if results is None or meta is None:
            raise MissingSnapshot(f"{MSB_REPO}@{rev}: {base} results.json or metadata.yaml absent")
        labels = msb_labels(results)
        name = re.search(rb"^name:\s*(.+)$", meta, re.MULTILINE)
        model = name.group(1).decode().strip().removeprefix("SWE-agent + ") if name else folder
        for path in snap.ls(rev, f"{base}/trajs"):
            if not path.endswith(".traj"):
                continue
            traj = snap.read_json(rev, path)
            if traj is None:
                continue  # blob absent from the snapshot
            run = path.split("/")[-1].removesuffix(".traj")
            b = msb_run(source, run, model, traj, labels.get(run))
            if len(b.requests) < 2:
                continue
            if run not in labels:
                b.notes.append("instance not evaluated in the source's results.json (resolved null)")
            yield b


# --------------------------------------------------------------------------- source: AutoCodeRover (test part)


ACR_REPO = "nus-apr/auto-code-rover"
ACR_COMMIT = "3536ac292e3062ffb3f6e98457958e2b803228d6"
"""Repository HEAD (main); the results/ folder was committed with the initial commit ``7866b17``
(2024-04-09) and its reports re-evaluated in ``da4c043`` (2024-06-10)."""
ACR_RUNS: list[tuple[str, str]] = [
    # (source id, run folder under results/); both gpt-4-0125-preview on SWE-bench Lite
    ("acr-gpt4-lite-run1", "acr-run-1"),  # conf/vanilla-lite.conf: stratified search, no validation
    ("acr-gpt4-lite-validation", "acr-val-only"),  # the same with patch validation (test results fed back)
]
ACR_PER_CLASS = 75
ACR_COMPLAINTS = ("The search API calls seem not valid", "Your edit could not be applied to the program")
"""How the agent's messages begin when it could not use the model's answer (all proxy tries gave no
valid JSON; no patch could be extracted): counted as format-error events."""
ACR_TASK_DIR = re.compile(r"^(?P<iid>.+)_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d$")


def acr_numbered(files: list[str], prefix: str) -> dict[int, str]:
    """``<prefix><n>.json`` files of a task folder by their number."""
    out: dict[int, str] = {}
    for path in files:
        name = path.rsplit("/", 1)[-1]
        if name.startswith(prefix) and name.endswith(".json") and name[len(prefix) : -5].isdigit():
            out[int(name[len(prefix) : -5])] = path
    return out


def acr_complaints(b: RunBuilder, thread: list[Json]) -> None:
    """Count and mark the agent's complaints in a thread: its messages after a try whose answer it
    could not use (``ACR_COMPLAINTS``)."""
    for m in thread:
        if m["role"] != "assistant" and str(m["content"]).startswith(ACR_COMPLAINTS):
            b.format_errors += 1
            b.complaint(m)


def acr_run(
    source: str, run: str, model: str, resolved: bool | None, snap: Snapshot, rev: str, files: list[str]
) -> RunBuilder:
    """One task of an AutoCodeRover run from its dumped message threads.

    ``conversation_round_<r>.json`` is the search thread saved before round ``r``'s first call
    (the last one, after write_patch was dispatched, is the whole search thread); the reply at
    index ``len(round r)`` is that round's API selection, which the proxy agent
    (``agent_proxy_<r>.json``: one [system, user, assistant] thread per try) turned into JSON;
    ``debug_agent_write_patch_<i>.json`` is the write-patch thread after try ``i`` (the search thread
    under its own system prompt, then the patch prompt and the tries)."""
    b = RunBuilder(
        source=source,
        run=run,
        scaffold="autocoderover-2024.04 (text)",
        model=model,
        protocol="text",
        resolved=resolved,
    )

    def thread(path: str) -> list[Json]:
        raw = snap.read_json(rev, path)
        if raw is None:
            raise MissingSnapshot(f"{ACR_REPO}@{rev}: {path} absent from the snapshot")
        return [{"role": m["role"], "content": m["content"]} for m in raw]

    rounds = acr_numbered(files, "conversation_round_")
    proxies = acr_numbered(files, "agent_proxy_")
    patches = acr_numbered(files, "debug_agent_write_patch_")
    if not rounds:
        return b
    search = thread(rounds[max(rounds)])
    selection_round = {len(thread(path)): r for r, path in rounds.items() if r in proxies}
    n_proxy = 0
    for at, msg in enumerate(search):
        if msg["role"] != "assistant":
            continue
        b.request(search[:at], msg)
        if (r := selection_round.get(at)) is not None:
            for proxy in snap.read_json(rev, proxies[r]) or []:
                msgs = [{"role": m["role"], "content": m["content"]} for m in proxy]
                b.request(msgs[:-1], msgs[-1])
                n_proxy += 1
    acr_complaints(b, search)
    tries = 0
    if patches:
        write = thread(patches[max(patches)])
        for at in range(len(search), len(write)):
            if write[at]["role"] == "assistant":
                b.request(write[:at], write[at])
                tries += 1
        acr_complaints(b, write[len(search) :])
    b.notes.append(
        f"search thread ({len(rounds) - 1} round(s)) replayed from conversation_round_*.json; "
        f"{n_proxy} proxy-agent call(s) (JSON extraction of the API calls, response_format json_object) "
        f"after each selection; {tries} write-patch tr(y/ies) from debug_agent_write_patch_*.json; "
        "identical resends by the client's retry decorator are not recorded"
    )
    return b


def source_acr(mirror: Path) -> Iterator[RunBuilder]:
    snap = Snapshot(ACR_REPO, mirror)
    rev = snap.require(ACR_COMMIT)
    for source, folder in ACR_RUNS:
        base = f"results/{folder}"
        report = snap.read_json(rev, f"{base}/new_eval_results/report.json")
        stats = snap.read_json(rev, f"{base}/stats.json")
        if report is None or stats is None:
            raise MissingSnapshot(f"{ACR_REPO}@{rev}: {base} report.json or stats.json absent")
        folders: dict[str, dict[str, list[str]]] = {}  # instance -> task folder -> its files
        for path in snap.ls(rev, base):
            parts = path.split("/")
            if (
                len(parts) == 5
                and parts[2] not in ("new_eval_results", "old_eval_results")
                and (m := ACR_TASK_DIR.match(parts[3]))
            ):
                folders.setdefault(m.group("iid"), {}).setdefault("/".join(parts[:4]), []).append(path)
        # one folder per instance (the category folder the run filed it under); the latest if several
        tasks = {iid: found[max(found)] for iid, found in folders.items()}
        resolved = set(report.get("resolved") or [])
        labels = {iid: iid in resolved for iid in tasks}  # no applicable patch: unresolved
        for run in balanced(list(tasks), labels, ACR_PER_CLASS):
            b = acr_run(source, run, stats["model"], labels[run], snap, rev, tasks[run])
            if len(b.requests) >= 2:
                yield b


# --------------------------------------------------------------------------- source: Moatless Tools (test part)


MOAT_REPO = "aorwall/moatless-tools"
MOAT_COMMIT = "91f874186e8298e5270c00a334c7a962bb4cdfad"
"""'20241117_moatless_claude_3_5_sonnet_20241022 trajectories' (2024-11-17), on main; the code at this
commit is the one its evaluation (moatless/benchmark/loop_evaluation.py) ran."""
MOAT_DIR = "evaluations/20241117_moatless_claude_3_5_sonnet_20241022"
MOAT_LABELS_COMMIT = "44852c4d90aa545b5f04beb941d024a2df92e9e6"
MOAT_LABELS_PATH = "moatless/evaluation/datasets/resolved_submissions.json"
MOAT_SUBMISSION = "20241117_moatless_claude-3.5-sonnet-20241022"
"""The run's name on the SWE-bench Lite leaderboard, as resolved_submissions.json lists it."""
MOAT_PER_CLASS = 75
MOAT_EXAMPLES_HEADER = "\n\n# Examples\nHere are some examples of how to use the available actions:\n\n"
"""What CodingAgent.generate_system_prompt appends to the system prompt when any offered action has
few-shot examples (the search actions do); with tool-call responses it appends no example itself."""
MOAT_RETRY_NOTES = (
    "You're an autonomous agent that can't communicate with the user. Please provide a tool call.",
    "The request was invalid. Please try again.",
)
"""How the completion layer's own retry messages begin (a reply without a valid tool call)."""


def literal_constant(snap: Snapshot, rev: str, path: str, name: str) -> Any:
    """A module-level literal ``name = ...`` from a Python file at ``rev``."""
    src = snap.read(rev, path)
    if src is None:
        raise MissingSnapshot(f"{snap.repo}@{rev}: {path} absent")
    for node in ast.parse(src.decode()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise RuntimeError(f"{name} not found in {path}")


def strip_anthropic(message: Json) -> Json:
    """An Anthropic message without the ``cache_control`` markers prompt caching moved onto its
    newest blocks (they differ from call to call; the text is unchanged)."""
    content = message["content"]
    if isinstance(content, list):
        content = [{k: v for k, v in block.items() if k != "cache_control"} for block in content]
    return {"role": message["role"], "content": content}


def anthropic_to_chat(message: Json) -> list[Json]:
    """An Anthropic Messages-API message as OpenAI chat messages: text blocks become the content
    (joined by newlines), tool_use blocks tool_calls (the source's ids, ``input`` as a JSON string),
    each tool_result block a ``tool`` message, a user's text blocks one user message after them."""
    role, content = message["role"], message["content"]
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    texts = [block["text"] for block in content if block.get("type") == "text"]
    if role == "assistant":
        msg: Json = {"role": "assistant", "content": "\n".join(texts) if texts else None}
        calls = [
            {
                "id": block["id"],
                "type": "function",
                "function": {"name": block["name"], "arguments": orjson.dumps(block.get("input") or {}).decode()},
            }
            for block in content
            if block.get("type") == "tool_use"
        ]
        if calls:
            msg["tool_calls"] = calls
        return [msg]
    out: list[Json] = []
    for block in content:
        if block.get("type") == "tool_result":
            result = block.get("content")
            if isinstance(result, list):
                result = "\n".join(part.get("text", "") for part in result if isinstance(part, dict))
            out.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": result})
    if texts:
        out.append({"role": role, "content": "\n".join(texts)})
    return out


def moatless_completion(b: RunBuilder, system: str, completion: Json, base: int) -> int:
    """The requests behind one logged completion. Its ``input`` is the message list of the last
    attempt: the ``base`` messages the agent built, then for every earlier attempt that was retried
    an (assistant, user) pair the retry appended. Each attempt is a request; an earlier attempt's
    reply is the assistant message of its pair, the last one's the logged response.
    Returns the number of retried attempts."""
    sent = [strip_anthropic(m) for m in completion["input"]]
    chat: list[list[Json]] = [anthropic_to_chat(m) for m in sent]
    head = [{"role": "system", "content": system}]

    def upto(n: int) -> list[Json]:
        return head + [m for part in chat[:n] for m in part]

    retries = max(0, (len(sent) - base) // 2)
    for k in range(retries):
        at = base + 2 * k
        reply = chat[at][0] if sent[at]["role"] == "assistant" else None
        b.request(upto(at), reply)
        note = sent[at + 1]["content"]
        text = note if isinstance(note, str) else " ".join(str(x.get("content") or x.get("text") or "") for x in note)
        if MOAT_RETRY_NOTES[0] in text or MOAT_RETRY_NOTES[1] in text:
            b.format_errors += 1
            for m in chat[at + 1]:  # the note as a user message, or as the invalid call's tool result
                if any(note in str(m.get("content") or "") for note in MOAT_RETRY_NOTES):
                    b.complaint(m)
    response = completion.get("response") or {}
    reply = None
    if isinstance(response, dict) and isinstance(response.get("content"), list):
        reply = anthropic_to_chat({"role": "assistant", "content": response["content"]})[0]
    b.request(upto(len(sent)), reply)
    return retries


def moatless_internal_retries(sent: list[Json]) -> int:
    """Trailing (assistant, user) pairs the completion layer appended itself (reply without a valid
    tool call), recognised by its retry message."""
    n = 0
    while len(sent) >= 2 * n + 2 and sent[-2 * n - 2]["role"] == "assistant":
        note = sent[-2 * n - 1]["content"]
        text = note if isinstance(note, str) else " ".join(str(x.get("content") or x.get("text") or "") for x in note)
        if not any(m in text for m in MOAT_RETRY_NOTES):
            break
        n += 1
    return n


def moatless_run(run: str, traj: Json, resolved: bool | None, identify_prompt: str) -> RunBuilder:
    """One trajectory: per node, the agent's action completion (``build_action``) and, for search
    actions, their code-identification completion (``execute_action``), in node order.

    Where a node's attempts were retried, its logged input holds the messages the agent built for
    the node (``base``) plus one (assistant, user) pair per retried attempt. The history grows by
    the node's action and observation from one node to the next, so ``base`` is carried along
    (+2 a node) from the first node's (its leading task message(s)); when a node's input does not
    fit that (its history was rebuilt shorter, or the message after ``base`` is carried on into the
    next node's input, so it is history, not a retry), ``base`` is re-synchronised to the input
    less the completion layer's own recognisable retry pairs, and the node is noted."""
    agent = traj["agent"]
    b = RunBuilder(
        source="moatless-claude35-sonnet-lite",
        run=run,
        scaffold="moatless-tools-0.0.3 (claude tool use)",
        model=agent["completion"]["model"],
        protocol="tools",
        resolved=resolved,
    )
    system = agent["system_prompt"] + MOAT_EXAMPLES_HEADER
    builds = [
        [strip_anthropic(m) for m in c["input"]] if (c := (n.get("completions") or {}).get("build_action")) else None
        for n in traj["nodes"]
    ]
    base: int | None = None
    retried = identify = resynced = branched = 0
    previous = None
    for at, node in enumerate(traj["nodes"]):
        if previous is not None and node.get("parent_id") != previous:
            branched += 1
        previous = node.get("node_id")
        completions = node.get("completions") or {}
        build = completions.get("build_action")
        sent = builds[at]
        if build and sent is not None and "input" in build:
            if base is None:  # the first action: the root's task message(s) only
                base = next((i for i, m in enumerate(sent) if m["role"] == "assistant"), len(sent))
            following = next((x for x in builds[at + 1 :] if x is not None), None)
            extra = len(sent) - base
            fits = (
                base >= 1
                and extra >= 0
                and extra % 2 == 0
                and all(
                    sent[base + 2 * k]["role"] == "assistant" and sent[base + 2 * k + 1]["role"] == "user"
                    for k in range(extra // 2)
                )
                and (extra == 0 or following is None or len(following) <= base or following[base] != sent[base])
            )
            if not fits:
                resynced += 1
                base = len(sent) - 2 * moatless_internal_retries(sent)
            retried += moatless_completion(b, system, build, base)
            base += 2  # the next node's history adds this node's action and observation
        execute = completions.get("execute_action")
        if isinstance(execute, dict) and "input" in execute:
            retried += moatless_completion(b, identify_prompt, execute, 1)
            identify += 1
    b.notes.append(
        "requests are the logged completions' input (Anthropic messages, converted to chat: tool_use -> tool_calls, "
        "tool_result -> tool messages; cache_control markers dropped), each after a system message: the agent's "
        "system_prompt plus the few-shot header generate_system_prompt adds (inferred from the code), or the "
        "search actions' IDENTIFY_SYSTEM_PROMPT for their code-identification calls; tool schemas not recorded"
    )
    if identify:
        b.notes.append(f"{identify} code-identification call(s) of search actions, each a conversation of its own")
    if retried:
        b.notes.append(
            f"{retried} retried attempt(s) rebuilt from the retry pairs in the next attempt's input "
            "(their replies as the agent put them back into the history)"
        )
    if resynced:
        b.notes.append(f"{resynced} node(s) whose input did not continue the history: split re-synchronised there")
    if branched:
        b.notes.append(f"{branched} node(s) whose parent is not the node before")
    return b


def source_moatless(mirror: Path) -> Iterator[RunBuilder]:
    snap = Snapshot(MOAT_REPO, mirror)
    rev = snap.require(MOAT_COMMIT)
    labels_rev = snap.require(MOAT_LABELS_COMMIT)
    submissions = snap.read_json(labels_rev, MOAT_LABELS_PATH)
    if submissions is None:
        raise MissingSnapshot(f"{MOAT_REPO}@{labels_rev}: {MOAT_LABELS_PATH} absent")
    identify_prompt = literal_constant(snap, rev, "moatless/actions/search_base.py", "IDENTIFY_SYSTEM_PROMPT")
    paths = {p.split("/")[-2]: p for p in snap.ls(rev, MOAT_DIR) if p.endswith("/trajectory.json") and snap.has(rev, p)}
    labels = {run: MOAT_SUBMISSION in (submissions.get(run) or {}).get("resolved_submissions", []) for run in paths}
    for run in balanced(list(paths), labels, MOAT_PER_CLASS):
        traj = snap.read_json(rev, paths[run])
        if traj is None:
            continue
        b = moatless_run(run, traj, labels[run], identify_prompt)
        if len(b.requests) >= 2:
            yield b


# --------------------------------------------------------------------------- source: OpenHands 1.0 (mock function calling)


OH1_REPO = "ergt10/openhands_swebench"
OH1_COMMIT = "3f8ba937f9e13afa16e8596c497becbe6a52154c"  # 'check 1.7' (2026-01-06); later commits removed the data
OH1_DIR = "continuum32/princeton-nlp__SWE-bench_Lite-test/CodeActAgent/GLM-4.6-FP8_maxiter_135"
OH1_SESSIONS = ".eval_sessions/sessions"
OH1_SOURCE = "openhands1-glm46-lite"
OH1_SCAFFOLD = "openhands-codeact-1.0 (mock fn calling)"
OH1_RUNS = 150
OH1_ERROR_SUFFIX = "\n[Error occurred in processing last action]"
"""What ConversationMemory._process_observation appends to an ErrorObservation's text."""
OH1_RESULT = "EXECUTION RESULT of [{name}]:\n"
"""How convert_fncall_messages_to_non_fncall_messages turns a tool result into a user message."""


def oh1_truncate(text: str, max_chars: int) -> str:
    """``openhands.events.serialization.event.truncate_content``: keep both ends of a long text."""
    if len(text) <= max_chars or max_chars < 0:
        return text
    half = max_chars // 2
    return text[:half] + "\n[... Observation truncated due to length ...]\n" + text[-half:]


def oh1_tool_call_text(call: Json) -> str:
    """``fn_call_converter.convert_tool_call_to_string``: a tool call as the text the model is shown
    (list and dict values through Python's ``json.dumps``, as OpenHands wrote them)."""
    text = f"<function={call['function']['name']}>\n"
    for name, value in json.loads(call["function"]["arguments"]).items():
        shown = json.dumps(value) if isinstance(value, list | dict) else f"{value}"
        text += f"<parameter={name}>{shown}</parameter>\n"
    return text + "</function>"


def oh1_assistant_text(message: Json) -> str:
    """A reply as OpenHands puts it back into the history: ``ConversationMemory._process_action`` keeps
    the function-calling form of the reply (its content when not blank, and its one tool call), and the
    converter renders that as ``content + "\\n\\n" + call``, left-stripped."""
    content = message.get("content") or ""
    content = content if content.strip() else ""
    calls = message.get("tool_calls") or []
    if len(calls) > 1:
        raise ValueError("more than one tool call in a mock function-calling reply")
    if calls:
        content = (content + "\n\n" + oh1_tool_call_text(calls[0])).lstrip()
    return content


def oh1_observation_text(event: Json, max_chars: int) -> str:
    """``ConversationMemory._process_observation`` for the observation types these sessions hold."""
    kind = event.get("observation")
    content = event.get("content") or ""
    extras = event.get("extras") or {}
    if kind == "run":  # CmdOutputObservation.to_agent_observation()
        meta = extras.get("metadata") or {}
        text = f"{meta.get('prefix') or ''}{content}{meta.get('suffix') or ''}"
        if meta.get("working_dir"):
            text += f"\n[Current working directory: {meta['working_dir']}]"
        if meta.get("py_interpreter_path"):
            text += f"\n[Python interpreter: {meta['py_interpreter_path']}]"
        if meta.get("exit_code", -1) != -1:
            text += f"\n[Command finished with exit code {meta['exit_code']}]"
        return oh1_truncate(text, max_chars)
    if kind == "read":  # FileReadObservation: content as is (already truncated by openhands-aci)
        return content
    if kind == "edit" and extras.get("impl_source") == "oh_aci":  # FileEditObservation.__str__ in OH_ACI mode
        return oh1_truncate(content, max_chars)
    if kind in ("think", "task_tracking"):
        return oh1_truncate(content, max_chars)
    if kind == "error":
        return oh1_truncate(content, max_chars) + OH1_ERROR_SUFFIX
    raise ValueError(f"observation type {kind!r} not ported")


def oh1_is_error(message: Json) -> bool:
    return message["role"] == "user" and str(message["content"]).endswith(OH1_ERROR_SUFFIX)


def oh1_events(snap: Snapshot, session_blobs: dict[str, str]) -> list[Json]:
    """A session's events in id order: ``events/<id>.json``, gaps filled from the ``event_cache/`` chunks."""
    names = sorted(n for n in session_blobs if "/events/" in n or "/event_cache/" in n)
    by_id: dict[int, Json] = {}
    for name, blob in zip(names, snap.read_blobs([session_blobs[n] for n in names]), strict=True):
        if blob is None:
            raise MissingSnapshot(f"{OH1_REPO}@{OH1_COMMIT}: {name} absent from the snapshot")
        data = orjson.loads(blob)
        for event in data if isinstance(data, list) else [data]:
            by_id.setdefault(event["id"], event)
    return [by_id[i] for i in sorted(by_id)]


@dataclass
class Oh1Tally:
    """What a session's rebuild found, for its notes: kinds of calls, and how far the port agrees."""

    lost: int = 0  # unlogged calls between logged ones (reply failed the converter's validation)
    tail: int = 0  # the same after the last logged call, rendered from the events
    rejected: int = 0  # logged replies the agent's own validation rejected
    nudges: int = 0  # replies without a function call, answered by the fake user
    transitions: int = 0  # logged transitions re-rendered from the events by the port
    mismatches: int = 0
    step_gaps: int = 0  # step_id gaps the rebuilt calls do not explain


@dataclass
class Oh1Session:
    """A session's events, indexed the way the rebuild looks them up."""

    events: list[Json]
    max_chars: int
    actions: dict[str, Json] = field(default_factory=dict)  # by the id of the model response that made them
    observation_of: dict[int, Json] = field(default_factory=dict)  # by the id of the action that caused them
    errors: list[Json] = field(default_factory=list)  # ErrorObservations no action caused, in order

    def __post_init__(self) -> None:
        for e in self.events:
            if "action" in e and (e.get("tool_call_metadata") or {}).get("model_response"):
                self.actions[e["tool_call_metadata"]["model_response"]["id"]] = e
            if "observation" in e and e.get("cause") is not None:
                self.observation_of[e["cause"]] = e
            elif e.get("observation") == "error":
                self.errors.append(e)

    def rendered(self, reply: Json, response_id: str) -> list[Json]:
        """The messages a reply (function-calling form) added to the history: itself as the history keeps
        it, then its action's observation when the events hold one."""
        out = [{"role": "assistant", "content": oh1_assistant_text(reply)}]
        action = self.actions.get(response_id)
        if action is not None and action["id"] in self.observation_of:
            name = action["tool_call_metadata"]["function_name"]
            text = oh1_observation_text(self.observation_of[action["id"]], self.max_chars)
            out.append({"role": "user", "content": OH1_RESULT.format(name=name) + text})
        return out

    def trailing_errors(self, response_id: str) -> list[Json]:
        """The errors after the observation of the last logged reply's action, when nothing else followed."""
        action = self.actions.get(response_id)
        if action is None or action["id"] not in self.observation_of:
            return []
        after = self.observation_of[action["id"]]["id"]
        later = [e for e in self.events if e["id"] > after and e.get("observation") != "agent_state_changed"]
        return later if all(e in self.errors for e in later) else []

    def model_calls(self) -> int:
        """One per agent action (one reply each) and one per error no action caused (a rejected reply)."""
        acted = sum(1 for e in self.events if e.get("source") == "agent" and e.get("action") not in (None, "system"))
        return acted + len(self.errors)


def oh1_added(
    b: RunBuilder, tally: Oh1Tally, sess: Oh1Session, added: list[Json], prev_reply: Json, prev_id: str
) -> int:
    """How many of the messages a logged request added after the one before come from the previous
    reply (the rest are errors of unlogged calls); checks them against the port, and marks the
    agent's complaints among them."""
    if not added or added[0]["role"] != "assistant":
        tally.rejected += 1  # the previous reply failed the agent's own validation: only its error came back
        if added:
            b.complaint(added[0])
        return 1
    rendered = sess.rendered(prev_reply, prev_id)
    if len(rendered) == 1 and len(added) > 1:
        tally.nudges += 1  # no function call in it: the fake user answered
        b.complaint(added[1])
        rendered.append(added[1])
    tally.transitions += 1
    tally.mismatches += added[: len(rendered)] != rendered
    return 2


def openhands1_run(run: str, session: str, model: str, calls: list[Json], sess: Oh1Session) -> RunBuilder:
    """One session from its logged completions (in time order) and its events.

    A logged completion's ``messages`` are what was sent, after the mock function-calling conversion.
    Not logged: a call whose reply failed the converter's validation inside ``LLM.completion`` (it raises
    before the log is written); the ErrorObservation it caused is the next user message, so that call's
    request is the logged history up to that message (exact; reply lost). After the last logged call,
    such calls are rebuilt from the events with the port above (checked against every logged transition)."""
    b = RunBuilder(source=OH1_SOURCE, run=run, scaffold=OH1_SCAFFOLD, model=model, protocol="text", resolved=None)
    tally = Oh1Tally()
    prev: list[Json] = []
    prev_step = 0
    prev_reply: Json = {}
    prev_id = ""
    for call in calls:
        sent = [{"role": m["role"], "content": m["content"]} for m in call["messages"]]
        if not prev:
            start, skip = 2, 0  # the system prompt (tools described in it) and the task (in-context example first)
        elif sent[: len(prev)] != prev:
            raise RuntimeError(f"{OH1_SOURCE} {run}: a logged request does not continue the one before")
        else:
            start = len(prev)
            skip = oh1_added(b, tally, sess, sent[start:], prev_reply, prev_id)
        for j in range(start + skip, len(sent)):
            if not oh1_is_error(sent[j]):
                raise RuntimeError(f"{OH1_SOURCE} {run}: message {j} is not the error of an unlogged call")
            b.request(sent[:j], None)
            tally.lost += 1
            b.complaint(sent[j])
        step = call["kwargs"]["extra_body"]["metadata"].get("step_id")
        if isinstance(step, int):
            tally.step_gaps += step - prev_step - 1 != len(sent) - start - skip
            prev_step = step
        reply = call["response"]["choices"][0]["message"].get("content") or ""
        b.request(sent, {"role": "assistant", "content": reply})
        prev, prev_reply, prev_id = sent, call["fncall_response"]["choices"][0]["message"], call["response"]["id"]
    sent_errors = [m["content"].removeprefix("\n\n") for m in prev if oh1_is_error(m)]
    logged_errors = [oh1_observation_text(e, sess.max_chars) for e in sess.errors[: len(sent_errors)]]
    tally.mismatches += sent_errors != logged_errors
    # After the last logged call: its reply and observation, then one unlogged call per error that followed.
    if trailing := sess.trailing_errors(prev_id):
        history = [*prev, *sess.rendered(prev_reply, prev_id)]
        for k, error in enumerate(trailing):
            b.request(list(history), None)
            tally.tail += 1
            text = ("\n\n" if k else "") + oh1_observation_text(error, sess.max_chars)  # consecutive user messages
            history.append({"role": "user", "content": text})
            b.complaint(history[-1])
    b.format_errors = tally.lost + tally.tail + tally.rejected + tally.nudges
    oh1_notes(b, session, tally, sess.model_calls())
    return b


def oh1_notes(b: RunBuilder, session: str, tally: Oh1Tally, model_calls: int) -> None:
    b.notes.append(
        f"session {session}; requests are the logged llm_completions' messages (the text sent after OpenHands' mock "
        "function-calling conversion; no tools parameter sent); a reply is the raw response text, cut at the stop word "
        "'</function' (the next request carries it as the agent re-rendered it)"
    )
    if tally.lost:
        b.notes.append(
            f"{tally.lost} unlogged call(s) (reply failed the converter's validation before the log was written): "
            "request = the logged history before the error message it caused (exact), reply null"
        )
    if tally.tail:
        b.notes.append(
            f"{tally.tail} such call(s) after the last logged one: request rendered from the events (ported "
            "ConversationMemory + fn_call_converter; inferred), reply null"
        )
    if tally.rejected:
        b.notes.append(
            f"{tally.rejected} logged reply(ies) rejected by the agent's own validation (the next request ends in its error)"
        )
    if tally.nudges:
        b.notes.append(f"{tally.nudges} reply(ies) without a function call, answered by the fake user")
    b.notes.append(
        f"port check: {tally.transitions} logged transition(s) re-rendered from the events, "
        f"{tally.mismatches} mismatch(es)"
    )
    if tally.step_gaps:
        b.notes.append(f"{tally.step_gaps} gap(s) in step_id not explained by the rebuilt calls")
    if model_calls != len(b.requests):
        b.notes.append(f"the events imply {model_calls} model calls; {len(b.requests)} requests rebuilt")


def source_openhands1(mirror: Path) -> Iterator[RunBuilder]:
    snap = Snapshot(OH1_REPO, mirror)
    rev = snap.require(OH1_COMMIT)
    meta = snap.read_json(rev, f"{OH1_DIR}/metadata.json")
    if meta is None:
        raise MissingSnapshot(f"{OH1_REPO}@{OH1_COMMIT}: {OH1_DIR}/metadata.json absent")
    llm = meta["llm_config"]
    if llm.get("native_tool_calling") is not False or (meta.get("condenser_config") or {}).get("type") != "noop":
        raise RuntimeError(f"{OH1_SOURCE}: expected mock function calling and no condenser, metadata says otherwise")
    completions: dict[str, list[tuple[float, str]]] = {}
    for path, blob in snap.ls_blobs(rev, f"{OH1_DIR}/llm_completions").items():
        stamp = float(path.rsplit("-", 1)[1].removesuffix(".json"))
        completions.setdefault(path.split("/")[-2], []).append((stamp, blob))
    for files in completions.values():
        files.sort()
    session_files = snap.ls_blobs(rev, OH1_SESSIONS)
    sessions: dict[str, dict[str, str]] = {}
    for path, blob in session_files.items():
        sessions.setdefault(path.split("/")[2], {})[path] = blob
    # the session an instance ran in, as its first logged call names it
    runs = sorted(completions)
    session_of: dict[str, str] = {}
    for run, first in zip(runs, snap.read_blobs([completions[run][0][1] for run in runs]), strict=True):
        if first is None:
            raise MissingSnapshot(f"{OH1_REPO}@{OH1_COMMIT}: the first completion log of {run} is absent")
        session_of[run] = orjson.loads(first)["kwargs"]["extra_body"]["metadata"]["session_id"]
    by_session = {s: run for run, s in session_of.items() if s in sessions}
    ordered = sorted(by_session)
    stride = len(ordered) / OH1_RUNS if len(ordered) > OH1_RUNS else 1
    picked = sorted(by_session[ordered[int(k * stride)]] for k in range(min(OH1_RUNS, len(ordered))))
    for run in picked:
        session = session_of[run]
        blobs = snap.read_blobs([blob for _, blob in completions[run]])
        calls = [orjson.loads(blob) for blob in blobs if blob is not None]
        if len(calls) != len(completions[run]):
            raise MissingSnapshot(f"{OH1_REPO}@{OH1_COMMIT}: a completion log of {run} is absent from the snapshot")
        if any(c["kwargs"]["extra_body"]["metadata"].get("session_id") != session for c in calls):
            raise RuntimeError(f"{OH1_SOURCE} {run}: completion logs from more than one session")
        sess = Oh1Session(oh1_events(snap, sessions[session]), int(llm["max_message_chars"]))
        b = openhands1_run(run, session, llm["model"], calls, sess)
        b.notes.append("no evaluation report in the source (resolved null)")
        if len(b.requests) >= 2:
            yield b


# --------------------------------------------------------------------------- source: Claude Code 2.0 (test part)


CC_REPO = "yunwei37/agentcgroup"
CC_COMMIT = "5af9e7b8f37a93513206c331c7ec0ff149e89f27"
"""Repository HEAD (2026-03-07); the run folder was last changed in fa89f69 (2026-02-06)."""
CC_DIR = "experiments/all_images_local"
CC_TRACE = "attempt_1/trace.jsonl"
"""Claude Code's own session log of the run (``~/.claude/projects/...``), one line per entry."""
CC_SOURCE = "claudecode2-glm47flash-local"
CC_SCAFFOLD = "claude-code-2.0 (anthropic tool use)"
CC_VERSION = "2.0.0"
CC_SYSTEM = (
    "You are Claude Code, Anthropic's official CLI for Claude. "
    "[placeholder: Claude Code 2.0.0's system prompt is not logged in the source]"
)
"""Stands in for the system prompt Claude Code sent (Anthropic ``system``, not in the log): its first
sentence as in the 2.0.0 package, then a mark. The proxy reads a system prompt only for a role told
not to edit the code (``text.roles``), which neither this nor Claude Code's prompt says."""
CC_COMPLAINTS = (
    "<tool_use_error>InputValidationError: ",
    "<tool_use_error>Error: No such tool available: ",
)
"""How Claude Code 2.0.0's tool dispatch answers a call it cannot run as asked (arguments that fail the
tool's input schema; a tool it did not offer): the call's ``tool_result`` (``is_error``). A valid call
that a tool's own check refuses or that fails is answered ``<tool_use_error>`` too, with other words:
a tool error, not a complaint."""
CC_DROPPED_BLOCKS = ("thinking", "redacted_thinking")


def cc_tool(name: str, description: str, properties: Json, required: list[str]) -> Json:
    """An OpenAI tool schema for one Claude Code tool."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def cc_prop(kind: str, description: str, **extra: Any) -> Json:
    return {"type": kind, "description": description, **extra}


CC_TOOLS: list[Json] = [
    cc_tool(
        "Task",
        "Launch a new agent to handle complex, multi-step tasks autonomously.",
        {
            "description": cc_prop("string", "A short (3-5 word) description of the task"),
            "prompt": cc_prop("string", "The task for the agent to perform"),
            "subagent_type": cc_prop("string", "The type of specialized agent to use for this task"),
        },
        ["description", "prompt", "subagent_type"],
    ),
    cc_tool(
        "Bash",
        "Executes a given bash command in a persistent shell session with optional timeout.",
        {
            "command": cc_prop("string", "The command to execute"),
            "timeout": cc_prop("number", "Optional timeout in milliseconds (max 600000)"),
            "description": cc_prop(
                "string", "Clear, concise description of what this command does in 5-10 words, in active voice."
            ),
            "run_in_background": cc_prop(
                "boolean", "Set to true to run this command in the background. Use BashOutput to read the output later."
            ),
        },
        ["command"],
    ),
    cc_tool(
        "Glob",
        "Fast file pattern matching tool that works with any codebase size.",
        {
            "pattern": cc_prop("string", "The glob pattern to match files against"),
            "path": cc_prop(
                "string",
                "The directory to search in. If not specified, the current working directory will be used.",
            ),
        },
        ["pattern"],
    ),
    cc_tool(
        "Grep",
        "A powerful search tool built on ripgrep.",
        {
            "pattern": cc_prop("string", "The regular expression pattern to search for in file contents"),
            "path": cc_prop(
                "string", "File or directory to search in (rg PATH). Defaults to current working directory."
            ),
            "glob": cc_prop("string", 'Glob pattern to filter files (e.g. "*.js", "*.{ts,tsx}") - maps to rg --glob'),
            "output_mode": cc_prop(
                "string",
                'Output mode: "content" shows matching lines, "files_with_matches" shows file paths, "count" '
                'shows match counts. Defaults to "files_with_matches".',
                enum=["content", "files_with_matches", "count"],
            ),
            "-B": cc_prop("number", "Number of lines to show before each match (rg -B)."),
            "-A": cc_prop("number", "Number of lines to show after each match (rg -A)."),
            "-C": cc_prop("number", "Number of lines to show before and after each match (rg -C)."),
            "-n": cc_prop("boolean", "Show line numbers in output (rg -n)."),
            "-i": cc_prop("boolean", "Case insensitive search (rg -i)"),
            "type": cc_prop("string", "File type to search (rg --type)."),
            "head_limit": cc_prop("number", 'Limit output to first N lines/entries, equivalent to "| head -N".'),
            "multiline": cc_prop(
                "boolean", "Enable multiline mode where . matches newlines and patterns can span lines."
            ),
        },
        ["pattern"],
    ),
    cc_tool(
        "ExitPlanMode",
        "Use this tool when you are in plan mode and have finished presenting your plan.",
        {"plan": cc_prop("string", "The plan you came up with, that you want to run by the user for approval.")},
        ["plan"],
    ),
    cc_tool(
        "Read",
        "Reads a file from the local filesystem.",
        {
            "file_path": cc_prop("string", "The absolute path to the file to read"),
            "offset": cc_prop("number", "The line number to start reading from."),
            "limit": cc_prop("number", "The number of lines to read."),
        },
        ["file_path"],
    ),
    cc_tool(
        "Edit",
        "Performs exact string replacements in files.",
        {
            "file_path": cc_prop("string", "The absolute path to the file to modify"),
            "old_string": cc_prop("string", "The text to replace"),
            "new_string": cc_prop("string", "The text to replace it with (must be different from old_string)"),
            "replace_all": cc_prop("boolean", "Replace all occurences of old_string (default false)"),
        },
        ["file_path", "old_string", "new_string"],
    ),
    cc_tool(
        "Write",
        "Writes a file to the local filesystem.",
        {
            "file_path": cc_prop("string", "The absolute path to the file to write (must be absolute, not relative)"),
            "content": cc_prop("string", "The content to write to the file"),
        },
        ["file_path", "content"],
    ),
    cc_tool(
        "NotebookEdit",
        "Completely replaces the contents of a specific cell in a Jupyter notebook (.ipynb file) with new source.",
        {
            "notebook_path": cc_prop("string", "The absolute path to the Jupyter notebook file to edit"),
            "cell_id": cc_prop("string", "The ID of the cell to edit."),
            "new_source": cc_prop("string", "The new source for the cell"),
            "cell_type": cc_prop("string", "The type of the cell (code or markdown).", enum=["code", "markdown"]),
            "edit_mode": cc_prop(
                "string",
                "The type of edit to make (replace, insert, delete). Defaults to replace.",
                enum=["replace", "insert", "delete"],
            ),
        },
        ["notebook_path", "new_source"],
    ),
    cc_tool(
        "WebFetch",
        "Fetches content from a specified URL and processes it using an AI model.",
        {
            "url": cc_prop("string", "The URL to fetch content from"),
            "prompt": cc_prop("string", "The prompt to run on the fetched content"),
        },
        ["url", "prompt"],
    ),
    cc_tool(
        "TodoWrite",
        "Use this tool to create and manage a structured task list for your current coding session.",
        {
            "todos": cc_prop(
                "array",
                "The updated todo list",
                items={
                    "type": "object",
                    "properties": {
                        "content": {"type": "string"},
                        "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                        "activeForm": {"type": "string"},
                    },
                    "required": ["content", "status", "activeForm"],
                },
            )
        },
        ["todos"],
    ),
    cc_tool(
        "WebSearch",
        "Allows Claude to search the web and use the results to inform responses.",
        {
            "query": cc_prop("string", "The search query to use"),
            "allowed_domains": cc_prop(
                "array", "Only include search results from these domains", items={"type": "string"}
            ),
            "blocked_domains": cc_prop(
                "array", "Never include search results from these domains", items={"type": "string"}
            ),
        },
        ["query"],
    ),
    cc_tool(
        "BashOutput",
        "Retrieves output from a running or completed background bash shell.",
        {
            "bash_id": cc_prop("string", "The ID of the background shell to retrieve output from"),
            "filter": cc_prop("string", "Optional regular expression to filter the output lines."),
        },
        ["bash_id"],
    ),
    cc_tool(
        "KillShell",
        "Kills a running background bash shell by its ID.",
        {"shell_id": cc_prop("string", "The ID of the background shell to kill")},
        ["shell_id"],
    ),
    cc_tool(
        "SlashCommand",
        "Execute a slash command within the main conversation.",
        {"command": cc_prop("string", 'The slash command to execute with its arguments, e.g., "/review-pr 123"')},
        ["command"],
    ),
]
"""Claude Code 2.0.0's built-in tools in the order its tool list has them (``cli.js``), with their input
schemas (``sdk-tools.d.ts``, generated from the tools' JSON schemas) of the npm package
``@anthropic-ai/claude-code@2.0.0``. Not logged: reconstructed. Descriptions are one line, not the long
tool prompts Claude Code sends; parameter descriptions are the package's, some shortened."""


def cc_tool_messages(blocks: list[Json], tally: Counter[str]) -> list[Json]:
    """The user blocks answering one response as chat messages: a ``tool`` message per tool_result
    (string content as is, a block list's text parts joined; ``is_error: true`` kept on the message),
    then any text blocks as one user message."""
    out: list[Json] = []
    texts: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            texts.append(block["text"])
        elif kind == "tool_result":
            result = block.get("content")
            if isinstance(result, list):
                tally["result images dropped"] += sum(1 for part in result if part.get("type") == "image")
                result = "\n".join(part["text"] for part in result if part.get("type") == "text")
            msg: Json = {"role": "tool", "tool_call_id": block["tool_use_id"], "content": result or ""}
            if block.get("is_error") is True:
                msg["is_error"] = True
            out.append(msg)
        else:
            tally[f"user {kind} blocks dropped"] += 1
    if texts:
        out.append({"role": "user", "content": "\n".join(texts)})
    return out


def cc_reply(blocks: list[Json], tally: Counter[str]) -> Json:
    """One response (the blocks of its log lines, in order) as a chat assistant message, thinking dropped."""
    kept = []
    for block in blocks:
        kind = block.get("type")
        if kind in CC_DROPPED_BLOCKS:
            tally["thinking blocks dropped"] += 1
        elif kind in ("text", "tool_use"):
            kept.append(block)
        else:
            tally[f"assistant {kind} blocks dropped"] += 1
    if not kept:
        tally["replies empty without their thinking"] += 1
    return anthropic_to_chat({"role": "assistant", "content": kept})[0]


def cc_skipped(entry: Json) -> str | None:
    """Why a log line is not part of what Claude Code sent its model, or None when it is."""
    kind = entry.get("type")
    if kind == "summary":
        return "summary lines (session titles)"
    if kind not in ("user", "assistant"):
        return f"'{kind}' lines"
    if entry.get("isSidechain"):
        return "side-chain lines (a Task sub-agent's own conversation)"
    if entry.get("isVisibleInTranscriptOnly"):
        return "transcript-only lines"
    return None


@dataclass
class CcReplay:
    """Claude Code's history as it sent it, rebuilt line by line: the response being read (its blocks,
    its ``message.id``) and the user blocks after it, each merged when the next turn begins."""

    b: RunBuilder
    tally: Counter[str] = field(default_factory=Counter)
    history: list[Json] = field(default_factory=lambda: [{"role": "system", "content": CC_SYSTEM}])
    response: list[Json] = field(default_factory=list)
    response_id: str | None = None
    answer: list[Json] = field(default_factory=list)  # before the first response: the task

    def end_response(self) -> None:
        if self.response_id is not None:
            reply = cc_reply(self.response, self.tally)
            self.b.request(list(self.history), reply)
            self.history.append(reply)
        self.response, self.response_id = [], None

    def end_answer(self) -> None:
        for msg in cc_tool_messages(self.answer, self.tally):
            if msg["role"] == "tool" and str(msg["content"]).startswith(CC_COMPLAINTS):
                self.b.format_errors += 1
                self.b.complaint(msg)
            self.history.append(msg)
        self.answer = []

    def user(self, content: str | list[Json]) -> None:
        self.end_response()
        self.answer += [{"type": "text", "text": content}] if isinstance(content, str) else content

    def assistant(self, message: Json) -> None:
        if message["id"] != self.response_id:
            self.end_response()
            self.end_answer()
            self.response_id = message["id"]
        self.response += message["content"]

    def api_error(self) -> None:
        """Claude Code's synthetic note of a failed call: after the user's turn that request got no
        reply; after a reply (one cut at max_tokens) nothing was sent."""
        self.end_response()
        self.end_answer()
        if self.history[-1]["role"] == "assistant":
            self.tally["API-error notes after a reply (nothing sent)"] += 1
        else:
            self.b.request(list(self.history), None)
            self.tally["requests answered by an API error (reply null)"] += 1


def claudecode_run(run: str, entries: list[Json]) -> RunBuilder:
    """One run from Claude Code's session log. The lines of one response (one content block each)
    share ``message.id``; the user lines after it (``tool_result`` blocks) answer its ``tool_use`` ids.
    Claude Code sends the history as Anthropic messages with consecutive lines of one role merged:
    request k is every message before response k (the system prompt, the task, then the turns), its
    reply response k."""
    b = RunBuilder(
        source=CC_SOURCE,
        run=run,
        scaffold=CC_SCAFFOLD,
        model="",
        protocol="tools",
        resolved=None,
        tools=CC_TOOLS,
    )
    replay = CcReplay(b)
    skipped: Counter[str] = Counter()
    models: Counter[str] = Counter()
    versions: set[str] = set()
    previous: str | None = None
    for entry in entries:
        if (why := cc_skipped(entry)) is not None:
            skipped[why] += 1
            continue
        versions.add(str(entry.get("version")))
        if previous is not None and entry.get("parentUuid") != previous:
            skipped["line(s) whose parentUuid is not the line before (kept in file order)"] += 1
        previous = entry.get("uuid")
        if entry["type"] == "user":
            replay.user(entry["message"]["content"])
        elif entry.get("isApiErrorMessage"):
            replay.api_error()
        else:
            models[entry["message"].get("model") or ""] += 1
            replay.assistant(entry["message"])
    replay.end_response()
    replay.end_answer()
    b.model = models.most_common(1)[0][0] if models else ""
    b.notes.append(
        "history rebuilt from Claude Code's session log (lines of one response merged by message.id, the "
        "tool_result lines after it merged into its answer; tool_use -> tool_calls, tool_result -> tool messages, "
        "is_error kept on them); system prompt not logged (a marked placeholder stands in); tool schemas not "
        "logged (Claude Code 2.0.0's built-in tools, reconstructed); context Claude Code adds at request time "
        "(system reminders) not logged"
    )
    b.notes += [f"{n} {what}" for what, n in sorted((skipped | replay.tally).items())]
    if len(models) > 1:
        b.notes.append("models: " + ", ".join(f"{m} ({n})" for m, n in sorted(models.items())))
    if versions != {CC_VERSION}:
        b.notes.append("Claude Code versions: " + ", ".join(sorted(versions)))
    return b


def source_claudecode_local(mirror: Path) -> Iterator[RunBuilder]:
    snap = Snapshot(CC_REPO, mirror)
    rev = snap.require(CC_COMMIT)
    traces = {p.split("/")[-3]: p for p in snap.ls(rev, CC_DIR) if p.endswith(f"/{CC_TRACE}")}
    for run in sorted(traces):
        blob = snap.read(rev, traces[run])
        if blob is None:
            continue  # absent from the snapshot (a blob over its size limit)
        entries = [orjson.loads(line) for line in blob.splitlines() if line.strip()]
        b = claudecode_run(run, entries)
        b.notes.append("no test-based labels in the source (resolved null)")
        if len(b.requests) >= 2:
            yield b


# --------------------------------------------------------------------------- source: mini-swe-agent 2.x text, Devstral (test)


DEV_REPO = "pouyafath/BenchmarkLLMAgent"
DEV_COMMIT = "60e4e6b7ec725e4db397de2d32a44e235cf67a09"
DEV_DIR = "data/samples/101_issues_experiments"
DEV_GROUPS = (("a", "A"), ("b", "B"))
"""The two 101-issue groups of SWE-bench Verified (38 issues in both); each group's baseline run only:
the solver on the issue as SWE-bench gives it (its `enhanced_solver_run`s solve a rewritten issue)."""
DEV_SOURCE = "mswea2text-devstral-small2-verified"


def devstral_run(run: str, traj: Json, resolved: bool | None) -> RunBuilder:
    """mini-swe-agent 2.x's text-based model (```mswea_bash_command, `<returncode>` results), read as
    its tool-call runs are (`mswea2_history`): its unparsed replies are kept, so none is lost."""
    info = traj["info"]
    b = RunBuilder(
        source=DEV_SOURCE,
        run=run,
        scaffold="mini-swe-agent-2 (text)",
        model=info["config"]["model"]["model_name"],
        protocol="text",
        resolved=resolved,
    )
    mswea2_history(b, traj)
    b.notes.append(
        f"mini-swe-agent {info.get('mini_version')}, text-based model (```mswea_bash_command, <returncode> results); "
        f"exit {info.get('exit_status')}; history replayed as sent (messages minus 'extra', exit message skipped); "
        "a reply the agent could not parse is taken from its complaint's extra.model_response"
    )
    return b


def source_devstral(mirror: Path) -> Iterator[RunBuilder]:
    snap = Snapshot(DEV_REPO, mirror)
    rev = snap.require(DEV_COMMIT)
    for group, tag in DEV_GROUPS:
        folder = f"{DEV_DIR}/results_group_{group}/trae__devstral101_group{tag}_20260327"
        summary = snap.read_json(rev, f"{folder}/comparison_summary.json")
        if summary is None:
            raise MissingSnapshot(f"{DEV_REPO}@{rev}: {folder}/comparison_summary.json absent")
        labels: dict[str, bool | None] = {}
        for entry in summary["baseline"]["per_instance"]:
            graded = entry.get("evaluation_error") is None  # 'report_not_found': not graded
            labels[entry["instance_id"]] = bool(entry["resolved"]) if graded else None
        for instance, traj in trajectories(snap, rev, f"{folder}/baseline_solver_run"):
            b = devstral_run(f"{group}-{instance}", traj, labels.get(instance))
            if labels.get(instance) is None:
                b.notes.append("not graded by the source's harness (evaluation_error, or absent): resolved null")
            if len(b.requests) >= 2:
                yield b


# --------------------------------------------------------------------------- source: mini-swe-agent 2.x, Qwen3-Coder on Ollama (test)


QC_REPO = "f56e751/local-coding-agent-bench"
QC_COMMIT = "ccb0fdaaf803039f61ea24a633806249db46c70d"
QC_DIR = "swebench-results/b-10task"
QC_SOURCE = "mswea2-qwen3coder30b-ollama-verified10"


def source_qwen3coder(mirror: Path) -> Iterator[RunBuilder]:
    """mini-swe-agent 2.2.8 with tool calls (the shape `mswea2_run` reads) driving Qwen3-Coder-30B-A3B
    on Ollama, ten SWE-bench Verified instances; labels from the harness's `grading-result.json`
    (resolved true; an empty patch false; an instance whose evaluation errored null)."""
    snap = Snapshot(QC_REPO, mirror)
    rev = snap.require(QC_COMMIT)
    mswea = Snapshot(MSWEA_REPO, mirror)
    tools = mswea_bash_tool(mswea, mswea.require(MSWEA_REF))
    report = snap.read_json(rev, f"{QC_DIR}/grading-result.json")
    if report is None:
        raise MissingSnapshot(f"{QC_REPO}@{rev}: {QC_DIR}/grading-result.json absent")
    labels: dict[str, bool] = {i: True for i in report.get("resolved_ids", [])}
    labels |= {i: False for i in report.get("unresolved_ids", []) + report.get("empty_patch_ids", [])}
    for run, traj in trajectories(snap, rev, QC_DIR):
        b = mswea2_run(QC_SOURCE, run, traj, labels.get(run), tools)
        if run not in labels:
            b.notes.append("the harness's evaluation of this instance errored (error_ids): resolved null")
        b.notes.append(
            "tools: mini-swe-agent's BASH_TOOL as at the 2.2.7 ref the tune source reads (the runs are 2.2.8)"
        )
        if len(b.requests) >= 2:
            yield b


def source_local(_mirror: Path) -> Iterator[RunBuilder]:
    """The recovery bench's model on its test repositories, the proxy's request side silent
    (`local.py`): request i is the transcript's first `sent[i]` messages, its reply the next one."""
    for recorded in local.runs():
        b = RunBuilder(
            local.SOURCE, recorded.key, recorded.scaffold, local.MODEL, "tools", recorded.resolved, recorded.tools
        )
        messages = [chat_message(m) for m in recorded.transcript]
        for count in recorded.sent:
            reply = messages[count] if count < len(messages) and messages[count]["role"] == "assistant" else None
            b.request(messages[:count], reply)
        for message in messages:
            if message["role"] == "user" and message["content"] == recorded.complaint:
                b.complaint(message)
        b.notes.extend(recorded.notes)
        if len(b.requests) >= 2:
            yield b


# --------------------------------------------------------------------------- manifest

ORIGINS: dict[str, Json] = {
    "openhands": {
        "repository": OH_REPO,
        "part": "tune",
        "data_commit": OH_COMMIT,
        "data_commit_note": "commit 'uploading some exp data' (2024-12-09); the folder was deleted again in d74b5f6, so it is read from history",
        "paths": [
            f"{OH_DIR}/llm_completions/<instance>/*.json",
            f"{OH_DIR}/output.swebench_eval.md",
            f"{OH_DIR}/metadata.json",
        ],
        "licence": "MIT",
        "licence_file": "LICENSE (at the data commit)",
        "scaffold_version": "OpenHands CodeActAgent v0.15.0 (native function calling, no condenser, max 50 iterations)",
        "benchmark": "SWE-bench Verified, first 50 instances",
        "label_source": "output.swebench_eval.md sections 'Resolved Instances' / 'Unresolved Instances' (official harness)",
        "selection": "all 50 runs",
    },
    "mswea2": {
        "repository": MSWEA_REPO,
        "part": "tune",
        "data_commit": MSWEA_REF,
        "data_commit_note": "head of refs/pull/816 (an outside contributor's PR that committed run outputs; never merged)",
        "paths": [
            "output/<subset>/<instance>/<instance>.traj.json",
            "deepseek__deepseek-chat.<subset>.json (swebench report)",
            "src/minisweagent/models/utils/actions_toolcall.py (BASH_TOOL)",
        ],
        "licence": "MIT",
        "licence_file": "LICENSE.md (repository licence; the PR's output/ data carries no licence of its own)",
        "scaffold_version": "mini-swe-agent 2.2.7 (LitellmModel, tool calls, one 'bash' tool)",
        "benchmark": "SWE-bench Lite test (first 100 run) and dev (23)",
        "label_source": "swebench harness report json at the ref root: resolved_ids / unresolved_ids; reasoner subset has no report (null)",
        "selection": "every trajectory whose blob is in the snapshot and which made at least 2 requests",
    },
    "msb": {
        "repository": MSB_REPO,
        "part": "tune",
        "data_commit": MSB_COMMIT,
        "data_commit_note": "repository HEAD ('add bench logs'); the run folders were added 2024-08-25",
        "paths": [
            f"{MSB_DIR}/<run>/trajs/<instance>.traj",
            f"{MSB_DIR}/<run>/results/results.json",
            f"{MSB_DIR}/<run>/metadata.yaml",
        ],
        "licence": "none stated",
        "licence_file": None,
        "scaffold_version": "SWE-agent 0.x (princeton-nlp/SWE-agent, config/default.yaml: ThoughtActionParser, Last5Observations, one demonstration)",
        "benchmark": "Multi-SWE-bench Java (verified, 91 instances), 5 models",
        "label_source": "results/results.json (Multi-SWE-bench harness): 'resolved' ids true; unresolved/empty-patch/error ids false; "
        "others null (the gpt-4o-mini report evaluated 1 instance)",
        "selection": "every trajectory in the snapshot with at least 2 requests",
    },
    "mswea1": {
        "repository": MSWEA1_REPO,
        "part": "tune",
        "data_commit": MSWEA1_COMMIT,
        "data_commit_note": "repository HEAD (a fork of mini-swe-agent that committed its SWE-bench runs)",
        "paths": [
            "run_results/<run>/<instance>/<instance>.traj.json",
            "run_results/<run>/openai__<model>.<name>_eval.json (swebench report)",
        ],
        "licence": "MIT",
        "licence_file": "LICENSE.md (inherited from mini-swe-agent)",
        "scaffold_version": "mini-swe-agent 1.17.3 (text protocol: one ```bash block per reply, <returncode> results)",
        "benchmark": "SWE-bench Verified, the same 50 instances per run",
        "label_source": "the run's swebench report: resolved_ids true; unresolved/empty-patch/error ids false",
        "selection": "the four runs of the fork's stock agent (gpt-5-nano, gpt-5-mini at three reasoning settings); "
        "every trajectory with at least 2 requests",
    },
    "acr": {
        "repository": ACR_REPO,
        "part": "test",
        "data_commit": ACR_COMMIT,
        "data_commit_note": "repository HEAD (main); results/ was added in the initial commit 7866b17 (2024-04-09), "
        "the reports re-evaluated in da4c043 (2024-06-10)",
        "paths": [
            "results/<run>/<category>/<instance>_<date>/conversation_round_<r>.json",
            "results/<run>/<category>/<instance>_<date>/agent_proxy_<r>.json",
            "results/<run>/<category>/<instance>_<date>/debug_agent_write_patch_<i>.json",
            "results/<run>/new_eval_results/report.json",
            "results/<run>/stats.json",
        ],
        "licence": "GPL-3.0 at the commit that added the data (7866b17); the repository's LICENSE is now a dual "
        "AGPL-3.0 (non-commercial) / commercial licence",
        "licence_file": "LICENSE",
        "scaffold_version": "AutoCodeRover, initial public release (runs name an unpublished commit a5f016d; prompts match "
        "app/ at 7866b17): stratified search rounds with text API calls, proxy agent, write_patch",
        "benchmark": "SWE-bench Lite (300 instances per run)",
        "label_source": "results/<run>/new_eval_results/report.json (SWE-bench harness) 'resolved' true; every other task "
        "of the run false (no applicable patch counts as unresolved)",
        "selection": f"up to {ACR_PER_CLASS} resolved + {ACR_PER_CLASS} unresolved, fixed stride over sorted instance ids",
    },
    "moatless": {
        "repository": MOAT_REPO,
        "part": "test",
        "data_commit": MOAT_COMMIT,
        "data_commit_note": "'20241117_moatless_claude_3_5_sonnet_20241022 trajectories' (2024-11-17, main); labels from "
        f"{MOAT_LABELS_PATH} at {MOAT_LABELS_COMMIT[:7]} (2025-05-30, main)",
        "paths": [
            f"{MOAT_DIR}/<instance>/trajectory.json",
            f"{MOAT_LABELS_PATH} (at the labels commit)",
            "moatless/actions/search_base.py (IDENTIFY_SYSTEM_PROMPT)",
            "moatless/agent/code_agent.py, moatless/completion/completion.py (how requests are built; read, not run)",
        ],
        "licence": "MIT",
        "licence_file": "LICENSE (at the data commit)",
        "scaffold_version": "Moatless Tools 0.0.3 (pyproject; the run calls itself 'moatless_tools_0_4'): CodingAgent with "
        "Claude tool use (SemanticSearch, FindClass, FindFunction, FindCodeSnippet, ViewCode, str_replace_editor, "
        "Finish, Reject), message history, search actions' code-identification calls",
        "benchmark": "SWE-bench Lite (300 trajectories committed, some blobs absent from the snapshot)",
        "label_source": f"resolved_submissions.json (the repository's digest of the SWE-bench leaderboard runs): resolved if "
        f"'{MOAT_SUBMISSION}' is among the instance's resolved submissions, else unresolved",
        "selection": f"up to {MOAT_PER_CLASS} resolved + {MOAT_PER_CLASS} unresolved among the trajectories present, "
        "fixed stride over sorted instance ids",
    },
    "openhands1": {
        "repository": OH1_REPO,
        "part": "test",
        "data_commit": OH1_COMMIT,
        "data_commit_note": "'check 1.7' (2026-01-06, the only commit holding both); the run folder (continuum32/) was "
        "removed again in 32f4abd and the session folders in 57c27c9, so both are read from history",
        "paths": [
            f"{OH1_DIR}/llm_completions/<instance>/*.json",
            f"{OH1_DIR}/metadata.json",
            f"{OH1_SESSIONS}/<session>/events/*.json and event_cache/*.json",
            "OpenHands/ (the vendored OpenHands 1.0.0 that ran: llm/llm.py, llm/fn_call_converter.py, "
            "memory/conversation_memory.py; read, not run)",
        ],
        "licence": "none stated",
        "licence_file": None,
        "scaffold_version": "OpenHands 1.0.0 CodeActAgent (vendored copy with timing/tracing edits to llm.py and "
        "codeact_agent.py), native_tool_calling=false (mock function calling: tools described in the system prompt, "
        "calls as <function=...> text, results as user messages), NoOp condenser, max 135 iterations",
        "benchmark": "SWE-bench Lite test (189 instances with logged completions and a session folder)",
        "label_source": "none: no evaluation report in the repository (output.jsonl blob absent); resolved null",
        "selection": f"{OH1_RUNS} sessions by a fixed stride over the sorted session ids",
    },
    "claudecode": {
        "repository": CC_REPO,
        "part": "test",
        "data_commit": CC_COMMIT,
        "data_commit_note": "repository HEAD (2026-03-07); the run folder was last changed in "
        "fa89f690aa2ab437ab53ddf175b9928d02754c96 (2026-02-06), the runs are of 2026-02-04/06",
        "paths": [
            f"{CC_DIR}/<instance>/{CC_TRACE} (Claude Code's session log)",
            "scripts/run_all_swebench_images.py, scripts/run_swebench.py (how Claude Code was run: --print "
            "--dangerously-skip-permissions, ANTHROPIC_BASE_URL at a local llama-server; read, not run)",
        ],
        "licence": "GPL-2.0",
        "licence_file": "LICENSE (repository root, at the data commit; the data has no licence of its own)",
        "scaffold_version": f"Claude Code CLI {CC_VERSION} (the version every log line names), Anthropic Messages "
        "API with tool use, driving GLM-4.7-Flash (open weights, ~30B total / 3B active MoE, GGUF Q4_K_M) served "
        "by llama.cpp's llama-server on the same machine",
        "benchmark": "SWE-rebench tasks (swerebench/sweb.eval.x86_64.* images): the tasks only; the trajectories "
        "are agentcgroup's own Claude Code runs, not Nebius' trajectories",
        "label_source": "none: no test-based evaluation in the repository (results.json holds the CLI's output and "
        "exit code, summary.json's 'success' is the runner's, not a harness result); resolved null",
        "selection": "every instance folder whose trace.jsonl blob is in the snapshot (one, over 4 MiB, is "
        "absent) and whose run made at least 2 requests, sorted by instance id",
    },
    "coder": {
        "repository": CODER_REPO,
        "part": "tune",
        "data_commit": CODER_COMMIT,
        "data_commit_note": "repository HEAD",
        "paths": ["trajs/<instance>.traj", "results.json", "config/roles/*.yml"],
        "licence": "none stated",
        "licence_file": None,
        "scaffold_version": "CodeR (multi-agent built on SWE-agent 0.x; ThoughtActionParser, DefaultHistoryProcessor)",
        "benchmark": "SWE-bench Lite (261 trajectories committed)",
        "label_source": "results.json 'resolved' (82 ids); other trajectories unresolved",
        "selection": f"{CODER_PER_CLASS} resolved + {CODER_PER_CLASS} unresolved, fixed stride over sorted instance ids",
    },
    "devstral": {
        "repository": DEV_REPO,
        "part": "test",
        "data_commit": DEV_COMMIT,
        "data_commit_note": "repository HEAD (2026-05-25); the runs are of 2026-03-27",
        "paths": [
            f"{DEV_DIR}/results_group_<a|b>/trae__devstral101_group<A|B>_20260327/baseline_solver_run/<instance>/"
            "<instance>.traj.json",
            f"{DEV_DIR}/results_group_<a|b>/trae__devstral101_group<A|B>_20260327/comparison_summary.json "
            "(baseline.per_instance)",
        ],
        "licence": "none stated",
        "licence_file": None,
        "scaffold_version": "mini-swe-agent 2.2.5, text-based model (LitellmTextbasedModel: ```mswea_bash_command, "
        "<returncode> results), driving Devstral-Small-2-24B-Instruct-2512 (open weights, 24B dense) on vLLM",
        "benchmark": "SWE-bench Verified, two groups of 101 issues (38 in both)",
        "label_source": "comparison_summary.json baseline.per_instance (SWE-bench harness): resolved true/false; "
        "an instance with an evaluation_error (report_not_found) is null",
        "selection": "every baseline trajectory in the snapshot with at least 2 requests (not the enhanced runs, "
        "which solve an issue another agent rewrote)",
    },
    "qwen3coder": {
        "repository": QC_REPO,
        "part": "test",
        "data_commit": QC_COMMIT,
        "data_commit_note": "repository HEAD (2026-04-27)",
        "paths": [
            f"{QC_DIR}/<instance>/<instance>.traj.json",
            f"{QC_DIR}/grading-result.json (SWE-bench harness)",
        ],
        "licence": "MIT",
        "licence_file": "LICENSE (repository root, at the data commit)",
        "scaffold_version": "mini-swe-agent 2.2.8 (LitellmModel, tool calls, one 'bash' tool), driving "
        "qwen3-coder-agent (an Ollama model built FROM qwen3-coder:30b: Qwen3-Coder-30B-A3B, open weights, "
        "small MoE) on Ollama",
        "benchmark": "SWE-bench Verified, its first ten instances",
        "label_source": "grading-result.json: resolved_ids true; unresolved_ids and empty_patch_ids false; "
        "error_ids null",
        "selection": "every trajectory in the folder with at least 2 requests",
    },
    "local": local.ORIGIN,
}


def write_manifest(path: Path, mirror: Path, by_source: dict[str, list[RunBuilder]], origin_of: dict[str, str]) -> None:
    entries = []
    for source, builders in sorted(by_source.items()):
        origin = ORIGINS[origin_of[source]]
        head = Snapshot(origin["repository"], mirror).head() if origin["repository"] else None  # local: none
        entries.append(
            {
                "id": source,
                "part": origin["part"],
                **{k: v for k, v in origin.items() if k not in ("repository", "part")},
                "repository": origin["repository"],
                "snapshot_head": head,
                "scaffold": sorted({b.scaffold for b in builders}),
                "protocol": sorted({b.protocol for b in builders}),
                "models": sorted({b.model for b in builders}),
                "runs": len(builders),
                "resolved": sum(b.resolved is True for b in builders),
                "unresolved": sum(b.resolved is False for b in builders),
                "unlabelled": sum(b.resolved is None for b in builders),
                "requests": sum(len(b.requests) for b in builders),
                "format_error_events": sum(b.format_errors for b in builders),
                "data_file": f"data/{source}.jsonl.gz",
            }
        )
    path.write_bytes(orjson.dumps({"sources": entries}, option=orjson.OPT_INDENT_2) + b"\n")


# --------------------------------------------------------------------------- main


SOURCES: dict[str, Callable[[Path], Iterator[RunBuilder]]] = {
    "openhands": source_openhands,
    "mswea2": source_mswea2,
    "mswea1": source_mswea1,
    "coder": source_coder,
    "msb": source_msb,
    "acr": source_acr,
    "moatless": source_moatless,
    "openhands1": source_openhands1,
    "claudecode": source_claudecode_local,
    "devstral": source_devstral,
    "qwen3coder": source_qwen3coder,
    "local": source_local,
}


def write_source(path: Path, records: list[Json]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0, compresslevel=9) as gz:
        for rec in records:
            gz.write(orjson.dumps(rec) + b"\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR)
    parser.add_argument("--out", type=Path, default=HERE / "data")
    parser.add_argument("--manifest", type=Path, default=HERE / "sources.json")
    args = parser.parse_args(argv)

    by_source: dict[str, list[RunBuilder]] = {}
    origin_of: dict[str, str] = {}
    try:
        for name, build in SOURCES.items():
            for b in build(args.mirror):
                b.part = ORIGINS[name]["part"]
                by_source.setdefault(b.source, []).append(b)
                origin_of[b.source] = name
    except MissingSnapshot as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    total_runs = total_requests = 0
    fe_by_scaffold: Counter[str] = Counter()
    print(f"{'source':48} {'scaffold':38} {'model':44} runs  res unres null  reqs  MB")
    for source, builders in sorted(by_source.items()):
        path = args.out / f"{source}.jsonl.gz"
        write_source(path, [b.record() for b in builders])
        groups: dict[tuple[str, str], list[RunBuilder]] = {}
        for b in builders:
            groups.setdefault((b.scaffold, b.model), []).append(b)
            fe_by_scaffold[b.scaffold] += b.format_errors
        for (scaffold, model), bs in sorted(groups.items()):
            res = sum(b.resolved is True for b in bs)
            unres = sum(b.resolved is False for b in bs)
            reqs = sum(len(b.requests) for b in bs)
            total_runs += len(bs)
            total_requests += reqs
            print(
                f"{source:48} {scaffold:38} {model[:44]:44} {len(bs):4} {res:4} {unres:5} "
                f"{len(bs) - res - unres:4} {reqs:5} {path.stat().st_size / 1e6:5.1f}"
            )
    write_manifest(args.manifest, args.mirror, by_source, origin_of)
    print(f"total: {total_runs} runs, {total_requests} requests")
    for scaffold, n in sorted(fe_by_scaffold.items()):
        kind = "hidden requeries (inferred, not reconstructable)" if "0.x" in scaffold else "format-error events"
        print(f"{kind}, {scaffold}: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
