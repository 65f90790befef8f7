"""Real agents' trajectories replayed through the engine: what the proxy would have said to
each, and whether it was right to.

The corpus (`bench/corpus/`, rebuilt from public runs by `bench/corpus/convert.py`) holds each
run as the requests its agent sent. Every run is replayed on an engine of its own (runs share
no state), each request through the chat dialect exactly as the proxy reads it, with the
policy the run's agent would be given. The model's recorded reply to each request is judged by
the reply rules too (what a gate would hold). Nothing is sent anywhere.

Printed, per pattern: runs tripped among resolved and unresolved, the median turn of the first
trip, and intrusive actions (force, halt) on resolved runs; the failure model's share of
resolved runs tripped; the agents' own format-error loops and how soon they were caught; and
the judged precision, from `bench/corpus/judgments.jsonl` (each sampled trip judged right,
wrong or unclear, with a reason, by reading the turns around it).

    python bench/trajectories.py                      # the report
    python bench/trajectories.py --sample 20 --seed 1 # draw unjudged trips to judge, with context
    python bench/trajectories.py --view text          # tool-call runs rewritten as text protocols
"""

from __future__ import annotations

import argparse
import gzip
import multiprocessing
import random
import statistics
import sys
import tomllib
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from measures import Measured, Tripped, loops, measure, observed_turns  # noqa: E402

from proxy.dialects import CHAT, plan_offline  # noqa: E402
from proxy.engine.core import Engine  # noqa: E402
from proxy.engine.detectors import pattern_of  # noqa: E402
from proxy.engine.plan.reply import ReplyView, judge  # noqa: E402
from proxy.engine.state.failure import RepairState  # noqa: E402
from proxy.engine.text.messages import content_text  # noqa: E402
from proxy.engine.text.nudges import complains  # noqa: E402
from proxy.engine.writing.failure_reads import next_kind, resolved, step_of  # noqa: E402
from proxy.settings.kinds import Action, Ask, CallKind  # noqa: E402
from proxy.settings.policy import Policy, policy_from_mapping  # noqa: E402

CORPUS = HERE / "corpus" / "data"
JUDGMENTS = HERE / "corpus" / "judgments.jsonl"
FAILURE_MODEL = ("stuck_same_diagnostic", "reverify_owed")
FORMAT_LOOP = 3
"""Complaints in a row that make a format-error loop (the issue's bar: caught within 2 requests)."""
INTRUSIVE = ("force", "halt")


def _intrusive(pattern: str, action: str) -> bool:
    """A trip that takes the agent's step away: a force or a halt, or the block rung's refusal."""
    return action in INTRUSIVE or pattern == "gate:block"


PRESETS = {
    "mini-swe-agent": "mini_swe_agent",
    "openhands": "openhands",
    "swe-agent": "swe_agent",
    "coder": "swe_agent",
    "claude-code": "claude_code",
}
"""The bundled preset a run's scaffold would be given (by the start of its scaffold's name)."""


@dataclass(frozen=True, slots=True)
class Run:
    source: str
    run: str
    scaffold: str
    model: str
    protocol: str
    resolved: bool | None
    tools: list[Any] | None
    pool: list[dict[str, Any]]
    requests: list[dict[str, Any]]
    part: str = "tune"
    """`tune` (rules are written and judged against it) or `test` (opened only to measure)."""
    complaints: frozenset[int] = frozenset()
    """Pool indices of the agent's own format-error complaints, as the converter marked them."""
    marked: bool = False
    """The record carries `complaints` (even an empty list): complaints are read from the marks,
    not recognised by the proxy's own `complains()`."""

    @property
    def key(self) -> str:
        return f"{self.source}/{self.run}"

    def messages(self, index: int) -> list[dict[str, Any]]:
        return [self.pool[i] for i in self.requests[index]["messages"]]

    def reply(self, index: int) -> dict[str, Any] | None:
        at = self.requests[index].get("reply")
        return None if at is None else self.pool[at]


def load_runs(folder: Path = CORPUS, sources: set[str] | None = None) -> Iterator[Run]:
    files = sorted(folder.glob("*.jsonl.gz"))
    if not files:
        raise SystemExit(f"no corpus under {folder}: run `python bench/corpus/convert.py` (see bench/corpus/README.md)")
    for path in files:
        with gzip.open(path, "rb") as handle:
            for line in handle:
                raw = orjson.loads(line)
                if sources and raw["source"] not in sources:
                    continue
                yield Run(
                    raw["source"],
                    raw["run"],
                    raw["scaffold"],
                    raw["model"],
                    raw["protocol"],
                    raw["resolved"],
                    raw.get("tools"),
                    raw["pool"],
                    raw["requests"],
                    raw.get("part", "tune"),
                    frozenset(raw.get("complaints") or ()),
                    "complaints" in raw,
                )


@dataclass(frozen=True, slots=True)
class Fired:
    """One trip, or one gate holding a recorded reply, at one request of one run."""

    run: str
    request: int
    """0-based index of the request in the run."""
    turn: int
    pattern: str
    action: str
    detail: str
    text: str = ""
    """The instruction or hand-back the proxy would have placed (empty for a gate)."""
    shadow: bool = False
    """Its pattern runs in shadow: `action` is what it would have done; it did nothing."""
    measured: Measured | None = None
    """The measures that need no judge (`measures.py`)."""


@dataclass(slots=True)
class Replayed:
    run: Run
    fired: list[Fired] = field(default_factory=list)
    loops: list[tuple[int, int]] = field(default_factory=list)
    """The run's loops by the plain rule (`measures.loops`), as (first, last) turn."""
    detected: list[str] = field(default_factory=list)
    """Detections still waiting for their confirmation (`Ladder.confirm`), as `pattern@turn`:
    silent, so not among the trips measured."""
    requests: int = 0
    failed: int = 0
    """Requests the engine could not read (forwarded untouched by the proxy)."""


def policy_for(run: Run, cache: dict[str, Policy], overrides: dict[str, Any] | None = None) -> Policy:
    """The bundled preset the run's scaffold would be given, with `overrides` laid over it."""
    name = next((preset for prefix, preset in PRESETS.items() if run.scaffold.startswith(prefix)), "default")
    if name not in cache:
        cache[name] = policy_from_mapping({"extends": name, **(overrides or {})}, f"<{name} + overrides>")
    return cache[name]


def _reply_view(reply: dict[str, Any]) -> ReplyView:
    calls = [c.get("function") or {} for c in reply.get("tool_calls") or [] if isinstance(c, dict)]
    names = tuple(f.get("name") for f in calls)
    arguments = tuple(str(f.get("arguments") or "") for f in calls)
    return ReplyView(content_text(reply.get("content")), names, arguments)


def _bodies(run: Run) -> Iterator[list[dict[str, Any]]]:
    for index in range(len(run.requests)):
        yield run.messages(index)


def _step(repair: RepairState) -> tuple[CallKind, str | None]:
    """The kind of the next step on the live failure, and the file a read of it names."""
    found = step_of(repair)
    kind = next_kind(found)
    if kind is not CallKind.READ or found.unread is None:
        return kind, None
    return kind, resolved(repair, found.unread[0])


def _acted(run: Run, index: int) -> bool | None:
    """The model's reply to request `index` made a call its agent took: what the agent sent next
    after it is a result, not a complaint (None: the run ends there)."""
    if index + 1 >= len(run.requests):
        return None
    known = len(run.requests[index]["messages"])
    for at in run.requests[index + 1]["messages"][known:]:
        message = run.pool[at]
        role = message.get("role")
        marked = at in run.complaints if run.marked else complains(content_text(message.get("content")))
        if role in ("tool", "user") and marked:
            return False
        if role in ("tool", "user"):
            return True
    return None


def replay_run(run: Run, policy: Policy) -> Replayed:
    """Every request of `run` through a fresh engine, as the proxy would read it, each trip
    measured against what the recorded run did next (`measures`)."""
    engine = Engine.of(policy)
    out = Replayed(run)
    tripped: list[Tripped] = []
    for index in range(len(run.requests)):
        body = {"model": run.model, "messages": run.messages(index)}
        if run.tools:
            body["tools"] = run.tools
        planned = plan_offline(engine, CHAT, orjson.dumps(body), {})
        out.requests += 1
        if planned is None:
            out.failed += 1
            continue
        decision = planned.decision
        texts = {i.turn: i.text for i in decision.placed}
        repair = decision.state.repair
        for trip in decision.new_trips:
            if trip.action is Action.OBSERVE:
                out.detected.append(f"{trip.pattern.name}@{trip.turn}")  # waiting to be confirmed: says nothing
                continue
            # A shadow trip places nothing: the words placed at its turn are another pattern's.
            text = "" if trip.shadow else decision.halt.text if decision.halt is not None else texts.get(trip.turn, "")
            out.fired.append(
                Fired(run.key, index, trip.turn, trip.pattern.name, trip.action.value, trip.detail, text, trip.shadow)
            )
            asks = pattern_of(trip).asks
            tripped.append(
                Tripped(
                    trip.pattern.name,
                    asks,
                    trip.turn,
                    trip.since,
                    repair.failing_key,
                    repair.failing_scripts,
                    step=_step(repair) if asks is Ask.STEP else None,
                    acted=_acted(run, index) if asks is Ask.CALL else None,
                )
            )
        reply = run.reply(index)
        if reply is not None and decision.halt is None and decision.reply.gates:
            judgement = judge(_reply_view(reply), decision.reply)
            if judgement.gate is not None:
                turn = decision.state.turns
                refusal = judgement.refusal
                why = f"refused by {refusal.pattern}: {refusal.reason}" if refusal else "the recorded reply is held"
                gate = f"gate:{judgement.gate.value}"
                out.fired.append(Fired(run.key, index, turn, gate, "retry", why))
                tripped.append(Tripped(gate, None, turn, 0, repair.failing_key, repair.failing_scripts))
    turns = observed_turns(_bodies(run), engine.rules.classifier)
    out.fired = [replace(f, measured=measure(turns, t)) for f, t in zip(out.fired, tripped, strict=True)]
    out.loops = loops(turns)
    return out


def _share(hit: int, total: int) -> str:
    return f"{hit}/{total} ({100 * hit / total:.0f}%)" if total else "0/0"


PARTS = ("tune", "test")


def _rate(flags: list[bool | None]) -> str:
    known = [f for f in flags if f is not None]
    return f"{sum(known)}/{len(known)}" if known else "-"


def _pattern_row(replays: list[Replayed], pattern: str) -> list[str]:
    """One part's figures for one pattern: runs tripped among resolved and unresolved, the median
    first turn, acting force/halt on resolved runs, and the measures that need no judge."""
    resolved = [r for r in replays if r.run.resolved is True]
    unresolved = [r for r in replays if r.run.resolved is False]
    fired = [f for r in replays for f in r.fired if f.pattern == pattern]
    firsts = [min(f.turn for f in r.fired if f.pattern == pattern) for r in replays if _fires(r, pattern)]
    intrusive = sum(
        1 for r in resolved for f in r.fired if f.pattern == pattern and f.action in INTRUSIVE and not f.shadow
    )
    measured = [f.measured for f in fired if f.measured is not None]
    lates = [m.late for m in measured if m.late is not None]
    return [
        _share(sum(_fires(r, pattern) for r in resolved), len(resolved)),
        _share(sum(_fires(r, pattern) for r in unresolved), len(unresolved)),
        str(statistics.median(firsts)) if firsts else "-",
        str(intrusive),
        str(len(fired)),
        _rate([m.redundant for m in measured]),
        _rate([m.stale for m in measured]),
        str(statistics.median(lates)) if lates else "-",
        _rate([m.repeated for m in measured]),
    ]


_COLUMNS = ("res runs", "unres runs", "1st turn", "acting f/h res", "trips", "redundant", "stale", "late", "repeated")


def report(replays: list[Replayed]) -> str:
    """Per part (tune, test) side by side: the per-pattern table with the measures that need no
    judge, the failure model's bar, intrusive actions on resolved runs; then per family."""
    parts = {part: [r for r in replays if r.run.part == part] for part in PARTS}
    lines: list[str] = []
    for part, runs in parts.items():
        resolved = [r for r in runs if r.run.resolved is True]
        lines.append(
            f"{part}: {len(runs)} runs ({len(resolved)} resolved, "
            f"{sum(r.run.resolved is False for r in runs)} unresolved), {sum(r.requests for r in runs)} requests, "
            f"{sum(r.failed for r in runs)} not analysable; families: "
            + ", ".join(sorted({r.run.scaffold for r in runs}))
        )
    patterns = sorted({f.pattern for r in replays for f in r.fired})
    shadow = {f.pattern for r in replays for f in r.fired if f.shadow}
    width = max([len("pattern"), *(len(p) + len(" (shadow)") * (p in shadow) for p in patterns)])
    lines += ["", f"{'pattern':{width}} {'part':5} " + " ".join(f"{c:>14}" for c in _COLUMNS)]
    for pattern in patterns:
        name = pattern + (" (shadow)" if pattern in shadow else "")
        for part, runs in parts.items():
            if runs:
                row = _pattern_row(runs, pattern)
                lines.append(f"{name:{width}} {part:5} " + " ".join(f"{c:>14}" for c in row))
                name = ""
    lines.append("")
    for part, runs in parts.items():
        resolved = [r for r in runs if r.run.resolved is True]
        model = sum(any(_fires(r, p) for p in FAILURE_MODEL) for r in resolved)
        intrusive = [f for r in resolved for f in r.fired if not f.shadow and _intrusive(f.pattern, f.action)]
        acting = sum(1 for f in intrusive if f.pattern != "format_error_loop")
        own = len(intrusive) - acting
        lines.append(
            f"{part}: failure model on resolved runs {_share(model, len(resolved))} (bar: at most 10%); "
            f"force, block or halt on resolved runs, format_error_loop's aside: {acting} (bar: 0); "
            f"format_error_loop's: {own}"
        )
    lines += ["", *_per_kind(replays, patterns)]
    lines += ["", "per family (trips, redundant, stale, median late, repeated):"]
    # A family with runs in both parts (mini-swe-agent 2.x: DeepSeek in tune, Qwen3-Coder in test)
    # is two lines: a part's figures never take in the other's runs.
    for family, part in sorted({(r.run.scaffold, r.run.part) for r in replays}):
        runs = [r for r in replays if r.run.scaffold == family and r.run.part == part]
        cells = []
        for pattern in patterns:
            row = _pattern_row(runs, pattern)
            if row[4] != "0":
                cells.append(f"{pattern} {row[4]} red {row[5]} stale {row[6]} late {row[7]} rep {row[8]}")
        lines.append(f"  [{part}] {family}: " + ("; ".join(cells) or "no trips"))
    return "\n".join(lines)


def _per_kind(replays: list[Replayed], patterns: list[str]) -> list[str]:
    """Per part and kind of model (frontier, open-weight): each pattern's trips, redundant, repeated."""
    lines = ["per part and kind of model (trips, redundant, repeated):"]
    for part in PARTS:
        for kind in ("frontier", "open-weight"):
            runs = [r for r in replays if r.run.part == part and kind_of(r.run.model) == kind]
            rows = [(pattern, _pattern_row(runs, pattern)) for pattern in patterns]
            cells = [f"{p} {row[4]} red {row[5]} rep {row[8]}" for p, row in rows if row[4] != "0"]
            if runs:
                lines.append(f"  [{part}] {kind}: " + ("; ".join(cells) or "no trips"))
    return lines


def _brief(message: dict[str, Any], chars: int) -> str:
    """One message as a reader needs it: role, text (head and tail) and calls."""
    text = content_text(message.get("content")).strip()
    if len(text) > chars:
        text = f"{text[: chars // 2]}\n   [... {len(text) - chars} chars ...]\n{text[-chars // 2 :]}"
    calls = [
        f"{(c.get('function') or {}).get('name')}({(c.get('function') or {}).get('arguments', '')[:chars]})"
        for c in message.get("tool_calls") or []
        if isinstance(c, dict)
    ]
    body = text + ("\n   CALLS " + "; ".join(calls) if calls else "")
    return f"[{message.get('role')}] " + body.replace("\n", "\n   ")


def context(run: Run, fired: Fired, before: int = 8, after: int = 6, chars: int = 700) -> str:
    """The turns around a trip: what the agent saw before it, what the proxy would have said, and
    what the agent did next (the recorded run, without the proxy)."""
    messages = run.messages(fired.request)
    lines = [
        f"=== {fired.run} request {fired.request} turn {fired.turn}: {fired.pattern} -> {fired.action}",
        f"run: {run.scaffold} / {run.model} / resolved={run.resolved}; {len(run.requests)} requests",
        f"detail: {fired.detail}" + (" [shadow]" if fired.shadow else ""),
        f"measures: {fired.measured}",
        "--- before (the end of the request):",
        *(_brief(m, chars) for m in messages[-before:]),
        "--- the proxy would say:",
        fired.text or _unsaid(fired),
        "--- what the agent did next (recorded):",
    ]
    reply = run.reply(fired.request)
    shown = [reply] if reply is not None else []
    if fired.request + 1 < len(run.requests):
        later = run.messages(min(len(run.requests) - 1, fired.request + after))
        known = len(messages)
        shown = [*shown, *later[known + (1 if reply is not None else 0) : known + after * 2]]
    lines += [_brief(m, chars) for m in shown[: after * 2]]
    return "\n".join(lines)


def _as_text(message: dict[str, Any], names: dict[str, str]) -> dict[str, Any] | None:
    """One message of a tool-call run rewritten as its agent would write it in a text protocol:
    a `bash` call as mini-swe-agent 1.x's fenced block, any other as an XML function call; its
    result as the user message that protocol answers with. None: the message cannot be (more
    than one call)."""
    calls = message.get("tool_calls") or []
    if message.get("role") == "assistant" and calls:
        if len(calls) > 1:
            return None
        function = calls[0].get("function") or {}
        name = str(function.get("name"))
        try:
            arguments = orjson.loads(function.get("arguments") or "{}")
        except orjson.JSONDecodeError:
            return None
        text = content_text(message.get("content"))
        if name == "bash" and set(arguments) == {"command"}:
            names[calls[0].get("id", "")] = "bash"
            return {"role": "assistant", "content": f"{text}\n\n```bash\n{arguments['command']}\n```"}
        names[calls[0].get("id", "")] = name
        params = "".join(f"<parameter={k}>{v}</parameter>\n" for k, v in arguments.items())
        return {"role": "assistant", "content": f"{text}\n<function={name}>\n{params}</function>"}
    if message.get("role") == "tool":
        name = names.get(str(message.get("tool_call_id")), "")
        output = content_text(message.get("content"))
        if name == "bash" and output.lstrip().startswith("<returncode>"):
            return {"role": "user", "content": output}
        return {"role": "user", "content": f"EXECUTION RESULT of [{name}]:\n{output}"}
    return message


def text_view(run: Run) -> Run | None:
    """The same run as its agent would have sent it in a text protocol, with no tools offered;
    None when a reply made several calls at once (no text protocol here writes that)."""
    names: dict[str, str] = {}
    ordered = sorted({i for r in run.requests for i in r["messages"]})
    pool = list(run.pool)
    for index in ordered:
        rewritten = _as_text(run.pool[index], names)
        if rewritten is None:
            return None
        pool[index] = rewritten
    return Run(run.source, run.run, run.scaffold, run.model, "text", run.resolved, None, pool, run.requests)


def compare_views(runs: list[Run], cache: dict[str, Policy], overrides: dict[str, Any] | None) -> str:
    """Tool-call runs replayed as sent and as text: the share whose trips are the same."""
    same = differ = skipped = 0
    differing: list[str] = []
    for run in runs:
        if run.protocol != "tools":
            continue
        view = text_view(run)
        if view is None:
            skipped += 1
            continue
        key = [(f.request, f.pattern, f.action) for f in replay_run(run, policy_for(run, cache, overrides)).fired]
        other = [(f.request, f.pattern, f.action) for f in replay_run(view, policy_for(view, cache, overrides)).fired]
        key = [k for k in key if not k[1].startswith("gate:")]
        other = [k for k in other if not k[1].startswith("gate:")]
        if key == other:
            same += 1
        else:
            differ += 1
            differing.append(f"{run.key}: tools {key} / text {other}")
    lines = [
        f"runs whose trips are the same as tool calls and as text: {same} of {same + differ} ({skipped} skipped: several calls in one reply)"
    ]
    return "\n".join(lines + differing[:20])


def whole_run(replayed: Replayed, chars: int = 500) -> str:
    """A run from its first request to its last, each new message once, with what the proxy
    would have done marked where it happened (for reading a run whole)."""
    run = replayed.run
    by_request: dict[int, list[Fired]] = defaultdict(list)
    for fired in replayed.fired:
        by_request[fired.request].append(fired)
    lines = [f"##### {run.key}: {run.scaffold} / {run.model} / resolved={run.resolved}; {len(run.requests)} requests"]
    shown: list[dict[str, Any]] = []
    for index in range(len(run.requests)):
        messages = run.messages(index)
        common = 0
        while common < min(len(shown), len(messages)) and shown[common] is messages[common]:
            common += 1
        if common < len(shown):
            lines.append(f"--- request {index} departs from the last at message {common} ---")
        lines += [f"r{index} " + _brief(m, chars) for m in messages[common:]]
        shown = messages
        for fired in by_request.get(index, []):
            lines.append(
                f">>> PROXY at request {index} (turn {fired.turn}): {fired.pattern} -> {fired.action}: {fired.detail}"
            )
            if fired.text:
                lines.append(">>> " + fired.text.replace("\n", "\n>>> "))
    return "\n".join(lines)


def judged(replays: list[Replayed], path: Path = JUDGMENTS, within: int = 0) -> str:
    """Judged precision of the trips that still fire, by part and pattern, under the strict rubric
    (`bench/corpus/README.md`: right only when the claim is true, the run was going wrong that way,
    and the step asked for is not what the agent did next), with the older lenient judgments on a
    line of their own. `within`: a trip the same pattern makes up to this many requests later in
    the same run counts as the judged one."""
    if not path.exists():
        return "no judgments yet (bench/corpus/judgments.jsonl)"
    part_of = {r.run.key: r.run.part for r in replays}
    kind = {r.run.key: kind_of(r.run.model) for r in replays}
    verdicts: dict[tuple[str, int, str], tuple[str, str]] = {}
    for line in path.read_bytes().splitlines():
        if line.strip():
            entry = orjson.loads(line)
            key = (entry["run"], int(entry["request"]), entry["pattern"])
            verdicts[key] = (entry["verdict"], entry.get("rubric", "lenient"))
    firing = {(f.run, f.request, f.pattern) for r in replays for f in r.fired}
    near = {(run, request - back, pattern) for run, request, pattern in firing for back in range(within + 1)}
    counts: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    for key, (verdict, rubric) in verdicts.items():
        if key in near and key[0] in part_of:
            for pattern in (key[2], "all", f"{key[2]} [{kind[key[0]]}]"):
                counts[(rubric, part_of[key[0]], pattern)][verdict] += 1
    where = f" (at the judged request or up to {within} later)" if within else ""
    lines = [f"judged trips that still fire{where} (right / wrong / unclear):"]
    for rubric in ("strict", "lenient"):
        for (r, part, pattern), c in sorted(counts.items()):
            if r != rubric:
                continue
            total = sum(c.values())
            lines.append(
                f"  {rubric:7} {part:5} {pattern:40} {c['right']} / {c['wrong']} / {c['unclear']}"
                f"  precision {100 * c['right'] / total:.0f}%"
            )
    unjudged = len(firing - verdicts.keys())
    lines.append(f"  ({unjudged} firing trips not judged)")
    return "\n".join(lines)


def complaint_runs(run: Run, length: int = FORMAT_LOOP) -> int | None:
    """The request at which the run's agent has complained, for the third time in a row, that
    the model's reply made no valid call (no call of the model's between the complaints: no tool
    result, and for an agent that writes its calls as text no user message that is not a
    complaint, its results being user messages), or None when it never does.

    A record with the converter's marks (`Run.marked`) says which messages are complaints: a
    message is one iff its pool index is marked (whatever its role: an invalid call's rejection
    can come back as its tool result), and a call the agent rejected does not end the streak, only
    an unmarked result does. Older records fall back to the proxy's own `complains()`, which only
    knows the complaint texts the proxy was written for."""
    for index in range(len(run.requests)):
        streak = 0
        for at in run.requests[index]["messages"]:
            message = run.pool[at]
            role = message.get("role")
            if run.marked:
                complaint = at in run.complaints
            else:
                complaint = role == "user" and complains(content_text(message.get("content")))
            if complaint:
                streak += 1
            elif role in ("tool", "user") or (not run.marked and role == "assistant" and message.get("tool_calls")):
                streak = 0
        if streak >= length:
            return index
    return None


def format_loops(replays: list[Replayed]) -> str:
    """Per part: runs with three complaints in a row, and how many a trip caught within 2 requests
    of the third; then runs with four (the pattern speaks once a fourth confirms the loop: at three
    the agent's own next reply was often valid), caught within 2 requests of the fourth."""
    lines: list[str] = []
    for length in (FORMAT_LOOP, FORMAT_LOOP + 1):
        lines += [_format_loops(part, [r for r in replays if r.run.part == part], length) for part in PARTS]
    return "\n".join(lines)


def _format_loops(part: str, replays: list[Replayed], length: int) -> str:
    found = caught = 0
    missed: list[str] = []
    for replayed in replays:
        at = complaint_runs(replayed.run, length)
        if at is None:
            continue
        found += 1
        if any(f.pattern == "format_error_loop" and at <= f.request <= at + 2 for f in replayed.fired):
            caught += 1
        else:
            missed.append(f"{replayed.run.key} (complaint {length} at request {at})")
    line = (
        f"{part}: format-error loops ({length} complaints in a row): {found} runs, caught within 2 requests of "
        f"complaint {length}: {_share(caught, found)}"
    )
    return "\n".join([line, *(f"  missed: {m}" for m in missed[:10])])


OPEN_WEIGHT = ("deepseek", "glm", "qwen", "llama", "mistral", "devstral", "gemma")
"""Model names whose weights are public (the rest are hosted models: "frontier" here)."""
LOOP_SAMPLE = 6
"""Loops missed printed per part (a sample to read)."""


def kind_of(model: str) -> str:
    """A model's kind: `open-weight` (its weights are public: a team can run it on its own server)
    or `frontier` (a hosted model)."""
    return "open-weight" if any(name in model.lower() for name in OPEN_WEIGHT) else "frontier"


def _acts_on(fired: Fired, first: int, last: int, *, shadow: bool) -> bool:
    """A trip in the loop's first half that does something (or would, with `shadow`)."""
    if fired.pattern in ("gate:action", "gate:done", "gate:finish") or not first <= fired.turn <= last:
        return False
    return shadow or not fired.shadow


def _unsaid(fired: Fired) -> str:
    """What a trip with no text of its own stands for: a gate's hold, or a shadow trip's action
    (in shadow nothing is placed, so there are no words to show: it is judged on what it asks)."""
    if fired.pattern.startswith("gate:"):
        return "(a gate holds the recorded reply and asks again)"
    if fired.shadow:
        return f"(in shadow: it would {fired.action}; no words are placed in shadow, so none are shown)"
    return "(nothing placed)"


def loop_recall(replays: list[Replayed], open_test: bool = False) -> str:
    """Per part and kind of model: the loops of unresolved and unlabelled runs (`measures.loops`),
    and how many an acting trip lands on before half the loop's turns are spent (with the shadow
    patterns switched on in brackets), and the patterns that do; the tune part's missed loops
    named, and the test part's with `open_test` (to read for recall at the end of a change)."""
    lines = ["loops on runs not resolved (plain rule: 5+ repeated turns), acted on in their first half:"]
    for part in PARTS:
        for kind in ("frontier", "open-weight"):
            runs = [
                r for r in replays if r.run.part == part and r.run.resolved is not True and kind_of(r.run.model) == kind
            ]
            found = acted = would = 0
            by: Counter[str] = Counter()
            missed: list[str] = []
            for replayed in runs:
                for first, last in replayed.loops:
                    found += 1
                    half = first + (last - first) // 2
                    hits = [f for f in replayed.fired if _acts_on(f, first, half, shadow=True)]
                    acted += any(not f.shadow for f in hits)
                    would += bool(hits)
                    by.update({f.pattern for f in hits})
                    if not hits:
                        missed.append(f"{replayed.run.key} turns {first}-{last}")
            if not runs:
                continue
            resolved = [r for r in replays if r.run.part == part and r.run.resolved and kind_of(r.run.model) == kind]
            spoke = [r for r in resolved if any(not f.shadow and not f.pattern.startswith("gate:") for f in r.fired)]
            patterns = ", ".join(f"{p} {n}" for p, n in sorted(by.items(), key=lambda kv: (-kv[1], kv[0])))
            lines.append(
                f"  {part} {kind}: {len(runs)} runs, {found} loops; acted on {_share(acted, found)}, "
                f"with shadow patterns {_share(would, found)} ({patterns or 'none'}); resolved runs a pattern "
                f"spoke on {_share(len(spoke), len(resolved))}"
            )
            if part == "tune" or open_test:
                lines += [f"    missed: {m}" for m in missed[:LOOP_SAMPLE]]
    return "\n".join(lines)


def _fires(replayed: Replayed, pattern: str) -> bool:
    return any(f.pattern == pattern for f in replayed.fired)


def _replay_one(job: tuple[Run, dict[str, Any] | None]) -> Replayed:
    run, overrides = job
    return replay_run(run, policy_for(run, {}, overrides))


def replay_all(runs: list[Run], overrides: dict[str, Any] | None, jobs: int) -> list[Replayed]:
    """Every run replayed on an engine of its own (in `jobs` processes: runs share no state)."""
    work = [(run, overrides) for run in runs]
    if jobs <= 1:
        return [_replay_one(job) for job in work]
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        return pool.map(_replay_one, work, chunksize=4)


def _selected(sources: set[str] | None, part: str, *, closed: bool) -> dict[str, Run]:
    """The runs of `part` from `sources`; none while the test part is `closed` is said, not printed."""
    runs = {run.key: run for run in load_runs(sources=sources) if part in ("all", run.part)}
    if not runs and closed:
        raise SystemExit("no run of the tune part matches (test runs are printed only with --open-test)")
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", help="comma-separated source ids (default: all)")
    parser.add_argument("--show", help="print every trip of these patterns in context (comma-separated)")
    parser.add_argument(
        "--sample", type=int, default=0, help="print this many unjudged trips, drawn at random, in context"
    )
    parser.add_argument(
        "--per-pattern", type=int, default=0, help="print up to this many unjudged trips of each pattern (stratified)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", help="TOML laid over each run's preset, e.g. '[patterns.reverify_owed]\\nafter = 3'")
    parser.add_argument("--resolved-only", action="store_true", help="with --show/--sample: resolved runs only")
    parser.add_argument("--views", action="store_true", help="compare tool-call runs replayed as sent and as text")
    parser.add_argument("--run", help="print these runs whole (comma-separated source/run keys), trips marked")
    parser.add_argument(
        "--quiet",
        type=int,
        default=0,
        help="print this many runs not resolved (unresolved or unlabelled) with no trip, at random",
    )
    parser.add_argument(
        "--within", type=int, default=0, help="judged precision: count a trip up to this many requests later too"
    )
    parser.add_argument("--part", choices=("tune", "test", "all"), default="all", help="which part to replay")
    parser.add_argument(
        "--open-test",
        action="store_true",
        help="let --show/--sample/--per-pattern/--run/--quiet print runs of the test part (to judge a finished "
        "change; never while rules are being written)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="processes to replay in")
    args = parser.parse_args(argv)
    sources = set(args.sources.split(",")) if args.sources else None
    cache: dict[str, Policy] = {}
    overrides = tomllib.loads(args.set.replace("\\n", "\n")) if args.set else None
    reading = bool(args.show or args.sample or args.per_pattern or args.run or args.quiet)
    part = args.part
    if reading and not args.open_test:
        if part == "test":
            raise SystemExit("the test part is opened only to judge a finished change: add --open-test")
        part = "tune"
    runs = _selected(sources, part, closed=reading and not args.open_test)
    if args.views:
        print(compare_views(list(runs.values()), cache, overrides))
        return 0
    replays = replay_all(list(runs.values()), overrides, args.jobs)
    if args.run or args.quiet:
        chosen = [r for r in replays if r.run.key in set((args.run or "").split(","))]
        if args.quiet:
            # not resolved: graded unresolved, or unlabelled (every open-weight run of the test part
            # is; drawing `resolved is False` alone gave a sample of frontier runs only)
            quiet = [r for r in replays if r.run.resolved is not True and not r.fired]
            chosen += random.Random(args.seed).sample(quiet, min(args.quiet, len(quiet)))
        for replayed in chosen:
            print(whole_run(replayed), end="\n\n")
        return 0
    if args.show or args.sample or args.per_pattern:
        wanted = set(args.show.split(",")) if args.show else None
        fired = [
            f
            for r in replays
            for f in r.fired
            if (wanted is None or f.pattern in wanted) and (not args.resolved_only or r.run.resolved)
        ]
        if args.sample or args.per_pattern:
            verdicts = _judged_keys(strict=True)
            fired = [f for f in fired if (f.run, f.request, f.pattern) not in verdicts]
            draw = random.Random(args.seed)
            if args.per_pattern:
                by_pattern: dict[str, list[Fired]] = defaultdict(list)
                for f in fired:
                    by_pattern[f.pattern].append(f)
                fired = [
                    x
                    for p in sorted(by_pattern)
                    for x in draw.sample(by_pattern[p], min(args.per_pattern, len(by_pattern[p])))
                ]
            else:
                fired = draw.sample(fired, min(args.sample, len(fired)))
        for f in fired:
            print(context(runs[f.run], f), end="\n\n")
        return 0
    print(report(replays))
    print()
    print(format_loops(replays))
    print()
    print(loop_recall(replays, args.open_test))
    print()
    print(judged(replays, within=args.within))
    return 0


def _judged_keys(path: Path = JUDGMENTS, *, strict: bool = False) -> set[tuple[str, int, str]]:
    """The trips judged already (under the strict rubric only, with `strict`)."""
    if not path.exists():
        return set()
    entries = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    return {
        (e["run"], int(e["request"]), e["pattern"])
        for e in entries
        if not strict or e.get("rubric", "lenient") == "strict"
    }


if __name__ == "__main__":
    raise SystemExit(main())
