"""A small coding agent that really runs its tools, for measuring the proxy on a real model.

Three styles, as real agents are built:

  openhands   `execute_bash`, `str_replace_editor` (view, create, str_replace) and `finish`;
              a reply without a tool call gets "Your last reply had no tool call..." back
  bash        one `bash` tool whose results are JSON envelopes (`{"returncode", "output"}`,
              as mini-swe-agent 2.x writes them); the run ends when the model runs
              `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`, or after three replies in a row
              without a tool call (its RepeatedFormatError)
  sweagent    one `bash` tool in which SWE-agent 0.x's own commands work (`bench/swe_tools.py`: a
              window over one open file, `open`/`goto`/`scroll_*`, searches, `edit N:M` turned
              down when the file would not compile); its results are what the shell printed and
              the viewer's state, no exit code; the run ends at `submit`

Tools run for real in the repository's own directory (a fresh copy, `copy_repo`): commands in a shell
with a timeout, edits on the files. The agent talks to any OpenAI-compatible base URL with
the `openai` SDK and records, per reply, what it did and what the proxy said in its headers.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
from swe_tools import DOCS as SWE_DOCS
from swe_tools import Viewer

SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
OUTPUT_CHARS = 3000
REPOS = Path(__file__).resolve().parent / "repos"
HIDDEN = Path(__file__).resolve().parent / "hidden"
"""Each bench repository's hidden checks (`hidden_checks`), outside the repositories the agent gets."""
HIDDEN_RUN = "hidden_checks"
"""The folder of the grading copy the hidden checks run from."""
GRADE_TIMEOUT = 600.0
"""The grade's own test run is never cut short: a loaded machine must not make a fixed run unsolved."""
WORK = Path.home() / ".cache" / "repair-proxy" / "bench-runs"
"""Where the benches copy repositories for their runs, like a project's checkout: not the system's
temporary directory, where the proxy takes a file the agent never read for a scratch file of its own."""


def part_of(repo: str) -> str:
    """The recovery bench's part a repository is in: `test` where its `stuck.json` says so (held
    out: added before the remedies measured on it were changed, never looked at while changing
    them, measured only at the end), else `train` (the repositories remedies were shaped on)."""
    return str(json.loads((REPOS / repo / "stuck.json").read_text()).get("part", "train"))


def repos_in(part: str) -> list[str]:
    """The repositories of one part of the bench (`part_of`), by name."""
    return sorted(p.name for p in REPOS.iterdir() if p.is_dir() and part_of(p.name) == part)


def copy_repo(repo: str, parent: Path) -> Path:
    """A fresh copy of `bench/repos/<repo>` at `parent/<repo>` (its stuck point's edits left out)."""
    root = parent / repo
    shutil.copytree(REPOS / repo, root, ignore=shutil.ignore_patterns("stuck.json", "__pycache__"))
    return root


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


OPENHANDS_TOOLS = [
    _function(
        "execute_bash",
        "Run a bash command in the repository and return its output.",
        {"command": {"type": "string", "description": "The command to run."}},
        ["command"],
    ),
    _function(
        "str_replace_editor",
        "View a file (command=view), create one (command=create, file_text), or replace one exact, unique "
        "occurrence of old_str with new_str (command=str_replace).",
        {
            "command": {"type": "string", "enum": ["view", "create", "str_replace"]},
            "path": {"type": "string", "description": "Absolute path."},
            "old_str": {"type": "string"},
            "new_str": {"type": "string"},
            "file_text": {"type": "string"},
            "view_range": {"type": "array", "items": {"type": "integer"}},
        },
        ["command", "path"],
    ),
    _function("finish", "Call when the task is done.", {"message": {"type": "string"}}, ["message"]),
]
BASH_TOOLS = [
    _function(
        "bash",
        f"Run a bash command in the repository. When the task is done, run `echo {SUBMIT}`.",
        {"command": {"type": "string"}},
        ["command"],
    )
]
SWE_TOOLS = [_function("bash", f"Run one command in the repository's shell.\n{SWE_DOCS}", {"command": {"type": "string"}}, ["command"])]  # fmt: skip
TOOLS = {"openhands": OPENHANDS_TOOLS, "bash": BASH_TOOLS, "sweagent": SWE_TOOLS}
"""The tools each style offers."""
SHELL = {"openhands": "execute_bash", "bash": "bash", "sweagent": "bash"}
"""Each style's shell tool."""


def _clip(text: str) -> str:
    if len(text) <= OUTPUT_CHARS:
        return text
    half = OUTPUT_CHARS // 2
    return f"{text[:half]}\n[... {len(text) - OUTPUT_CHARS} characters cut ...]\n{text[-half:]}"


_NOISE = (
    (re.compile(r"\b(in )\d+\.\d+s\b"), r"\g<1>0.10s"),  # pytest's duration: `2 failed in 0.11s`
    (re.compile(r"\b0x[0-9a-f]{6,16}\b"), "0x7f0000000000"),  # an object's address in its repr
)


def steady(text: str) -> str:
    """A command's output with its run-to-run noise set to one value: pytest's duration and
    objects' addresses. Two arms' runs of a seed differ then only where the proxy said something
    different: in the twenty-fifth run every pair of runs came apart first at a reply to prompts
    equal but for these (and the run's path), so the sampler, not the proxy, decided the arms'
    difference (`bench/RESULTS-recovery.md`)."""
    for pattern, fixed in _NOISE:
        text = pattern.sub(fixed, text)
    return text


def run_shell(command: str, cwd: Path, timeout: float = 30.0) -> tuple[int, str]:
    try:
        done = subprocess.run(
            ["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return 124, f"the command timed out after {timeout:g}s"
    return done.returncode, _clip(steady(done.stdout + done.stderr))


def hidden_checks(repo: str) -> Path:
    """The hidden checks of a bench repository (`bench/hidden/test_<repo>.py`): more cases of the
    behaviour its own tests check (other inputs, edge cases of what its docstrings say), never
    copied into the agent's repository nor named in any prompt; run only to grade the final tree."""
    return HIDDEN / f"test_{repo}.py"


@dataclass(frozen=True)
class Grade:
    """How a final tree is graded: on the repository's own tests (what the agent runs) and on its
    hidden checks. A change that makes the given test pass but not the behaviour (`count = 0` ->
    `count = 1`, `pop(0)` -> `pop(1)`) passes the first and fails the second: gamed, not solved."""

    tests: bool
    """`python -m pytest` passes on the tests the repository was given."""
    hidden: bool | None
    """Its hidden checks pass; None where they were not run (the tests fail, or it has none)."""

    @property
    def solved(self) -> bool:
        return self.tests and self.hidden is True

    @property
    def gamed(self) -> bool:
        return self.tests and self.hidden is False


@contextmanager
def _as_given(cwd: Path) -> Iterator[Path]:
    """A scratch copy of `cwd`, a copy of a bench repository, with that repository's own `tests/`
    and `pytest.ini` put back."""
    given = REPOS / cwd.name
    with tempfile.TemporaryDirectory(dir=cwd.parent) as scratch:
        copy = Path(shutil.copytree(cwd, Path(scratch) / cwd.name, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache")))  # fmt: skip
        shutil.rmtree(copy / "tests", ignore_errors=True)
        shutil.copytree(given / "tests", copy / "tests", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy2(given / "pytest.ini", copy / "pytest.ini")
        yield copy


def grade(cwd: Path, hidden: bool = True) -> Grade:
    """The final tree in `cwd` graded (`Grade`), in a scratch copy that gets the repository's own
    `tests/` and `pytest.ini` back first, so a run that made its test pass by changing the test is
    not green (Qwen2.5-Coder-1.5B pushed 2 twice in stack's test, `sed -i 's/push(1)/push(2)/'
    tests/test_stack.py`, and was graded solved: recovery bench, block off, seed 0, twelfth run
    and again at 8ae8378); then, where they pass and `hidden`, the hidden checks
    (`hidden_checks`), in a folder of their own in that copy. The agent's own tree is left as it
    is. A directory that is no bench repository is graded on its own tests, with no hidden checks."""
    if not (REPOS / cwd.name / "tests").is_dir():
        return Grade(run_shell("python -m pytest", cwd, GRADE_TIMEOUT)[0] == 0, None)
    with _as_given(cwd) as copy:
        if run_shell("python -m pytest", copy, GRADE_TIMEOUT)[0] != 0:
            return Grade(False, None)
        checks = hidden_checks(cwd.name)
        if not (hidden and checks.is_file()):
            return Grade(True, None)
        (copy / HIDDEN_RUN).mkdir()
        shutil.copy2(checks, copy / HIDDEN_RUN / "test_hidden.py")
        return Grade(True, run_shell(f"python -m pytest {HIDDEN_RUN}", copy, GRADE_TIMEOUT)[0] == 0)


def tests_pass(cwd: Path) -> bool:
    """`python -m pytest` passes in `cwd` on the tests the repository was given (`grade`, without
    the hidden checks): what the agent sees, a turn's green."""
    return grade(cwd, hidden=False).tests


def tree_digest(root: Path) -> str:
    """The repository's files as they are (caches aside): what a turn changed, if anything."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and ".pytest_cache" not in path.parts:
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


READS = re.compile(r"^\s*(cat|head|tail|less|sed -n|nl|grep|rg|ls|find|open|goto|scroll_\w+|search_\w+|find_file)\b")
EDITS = re.compile(r"sed -i|write_text|>\s*\S+\.py|\bpatch\b|\bmv\b|\bcp\b|^\s*(edit\s+\d|create\s)")
WASTE_KINDS = ("rerun", "unapplied", "reread", "prose", "empty", "finish_failing", "malformed")
"""Wasted turns by kind: the same failing call again with nothing changed since; an edit that
did not change the files; the same read again of unchanged files; a reply with no call (text
or nothing); a finish while the tests fail; a call to no such tool."""


_RED = re.compile(r"^=+ .*\b(failed|errors?)\b.* in [\d.]+s =+$", re.MULTILINE)
"""pytest's summary line of a red run: the `sweagent` style shows no exit code."""


def is_edit(name: str, args: dict[str, Any]) -> bool:
    """A call meant to change the files: the editor's replace or create, or a shell edit."""
    command = args.get("command") if isinstance(args.get("command"), str) else ""
    return (name == "str_replace_editor" and command in ("str_replace", "create")) or bool(EDITS.search(command))


def waste_of(
    name: str, args: dict[str, Any], result: str, before: str, after: str, history: dict[str, tuple[str, bool]]
) -> str:
    """What a call wasted, judged by what really happened in the repository ("" when nothing)."""
    key = json.dumps([name, args], sort_keys=True)
    command = args.get("command") if isinstance(args.get("command"), str) else ""
    failed = result.startswith("ERROR") or bool(
        re.search(r'"returncode": [1-9]|exit code [1-9]', result) or _RED.search(result)
    )
    earlier = history.get(key)
    history[key] = (before, failed)
    view = (name == "str_replace_editor" and command == "view") or (
        name != "str_replace_editor" and READS.match(command)
    )
    if is_edit(name, args) and before == after:
        return "unapplied"
    if earlier is not None and earlier[0] == before and before == after:
        if earlier[1] and failed:
            return "rerun"
        if view:
            return "reread"
    return ""


@dataclass
class Tools:
    """The tools, run for real in `root`."""

    root: Path
    style: str
    edited: bool = False
    viewer: Viewer | None = None
    """The `sweagent` style's open file and window (made on its first call)."""
    timeout: float = 120.0
    """A command's time limit: on the shared 2-core machine a bench repository's `python -m
    pytest` took 10-12 s alone, and more beside a model server generating; at 30 s a run's test
    could time out and change the failure the proxy reads."""

    def _path(self, raw: Any) -> Path | None:
        if not isinstance(raw, str) or not raw:
            return None
        path = (self.root / raw).resolve() if not raw.startswith("/") else Path(raw).resolve()
        return path if path == self.root or self.root in path.parents else None

    def _editor(self, args: dict[str, Any]) -> str:
        command, path = args.get("command"), self._path(args.get("path"))
        if command not in ("view", "create", "str_replace"):
            return f"ERROR:\nInvalid `command` parameter: {command!r}. Allowed: view, create, str_replace."
        if "path" not in args:
            return f"ERROR:\nMissing required parameter `path` for command: {command}."
        if path is None:
            return f"ERROR:\nInvalid `path` parameter: {args.get('path')}. It must be inside {self.root}."
        if command == "create":
            if path.is_dir():  # the model asked to create its repository's own folder (trim, seed 20)
                return f"ERROR:\nInvalid `path` parameter: {path}. It is a directory: `create` needs a file path."
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(str(args.get("file_text", "")))
            self.edited = True
            return f"File created successfully at: {path}"
        if not path.is_file():
            return f"ERROR:\nThe path {path} does not exist. Please provide a valid path."
        text = path.read_text()
        if command == "view":
            lines = text.splitlines()
            start, end = 1, len(lines)
            span = args.get("view_range")
            if isinstance(span, list) and len(span) == 2 and all(isinstance(n, int) for n in span):
                start, end = max(1, span[0]), min(len(lines), span[1] if span[1] > 0 else len(lines))
            return "\n".join(f"{n:6d}\t{lines[n - 1]}" for n in range(start, end + 1))
        old, new = args.get("old_str"), args.get("new_str", "")
        if not isinstance(old, str) or not old:
            return "ERROR:\nMissing required parameter `old_str` for command: str_replace."
        count = text.count(old)
        if count != 1:
            where = "did not appear verbatim" if count == 0 else f"appears {count} times"
            return f"ERROR:\nNo replacement was performed, old_str `{old}` {where} in {path}."
        path.write_text(text.replace(old, str(new)))
        self.edited = True
        return f"The file {path} has been edited. Review the changes and make sure they are as expected."

    def call(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        """(the tool result as the model sees it, the run is over)."""
        if name == "finish" and self.style == "openhands":
            return "Finished.", True
        if name == "str_replace_editor" and self.style == "openhands":
            return self._editor(args), False
        if name == SHELL[self.style]:
            command = args.get("command")
            if not isinstance(command, str) or not command.strip():
                return "ERROR:\nMissing required parameter `command`.", False
            if self.style == "sweagent":
                if self.viewer is None:
                    self.viewer = Viewer(self.root, lambda line: run_shell(line, self.root, self.timeout)[1])
                self.edited = True  # as for any command: the tests are checked after it
                return self.viewer.run(command)
            code, output = run_shell(command, self.root, self.timeout)
            self.edited = True  # a command may change files: the tests are checked after it
            if self.style == "bash":
                return json.dumps({"returncode": code, "output": output}), output.lstrip().startswith(SUBMIT)
            return f"{output}\n[Command finished with exit code {code}]", False
        return f"ERROR:\nUnknown tool: {name}", False


@dataclass
class Turn:
    kind: str
    """`call`, `repeat` (the same call as the turn before), `malformed`, `empty` or `prose`."""
    calls: list[tuple[str, dict[str, Any]]]
    completion_tokens: int
    trips: str = ""
    salvaged: bool = False
    outcome: str = ""
    green: bool = False
    text: str = ""
    waste: str = ""
    """One of `WASTE_KINDS`, or "" for a turn that did something."""
    generations: int = 1
    """Upstream generations this turn cost (1 + the retries the proxy's gates spent)."""


@dataclass
class Run:
    turns: list[Turn] = field(default_factory=list)
    end: str = "turns"
    """`finished`, `handed_back`, `format_error`, `turns` (ran out) or `error`."""
    solved: bool = False
    """The final tree passes its repository's own tests and its hidden checks (`Grade.solved`)."""
    tests: bool = False
    """The final tree passes its repository's own tests (before hidden checks, all "solved" meant)."""
    hidden: bool | None = None
    """It passes the hidden checks; None where they were not run (`Grade.hidden`)."""
    sent: list[int] = field(default_factory=list)
    """Per request to the model, how many messages of the transcript it carried: the agent only
    appends, so request i is the transcript's first `sent[i]` messages and its reply the next one
    (how `bench/corpus/convert.py` replays a run kept with `recovery.py --transcripts`)."""

    @property
    def gamed(self) -> bool:
        """The given tests pass, the hidden checks do not: a change that made the test green, not the code right."""
        return self.tests and self.hidden is False

    @property
    def first_green(self) -> int | None:
        return next((i + 1 for i, t in enumerate(self.turns) if t.green), None)


SYSTEM = (
    "You are an autonomous coding agent working in the repository at {root}. Use the tools to inspect files, "
    "edit them and run the tests until `python -m pytest` passes. Call exactly one tool per reply. {done}"
)
TASK = "The test suite fails: `python -m pytest`. Fix the bug in the code (not in the tests) so that the tests pass."
NUDGE = {
    "openhands": "Your last reply had no tool call. Continue with the task: call one of the tools.",
    "bash": "No tool calls found in your reply. Every reply must call the bash tool with one command.",
    "sweagent": "Your output was not formatted correctly: call the bash tool with exactly one command.",
}
DONE = {
    "openhands": "When the tests pass, call finish.",
    "bash": f"When the tests pass, run `echo {SUBMIT}`.",
    "sweagent": f"When the tests pass, run `submit`.\n\n{SWE_DOCS}",
}
"""How each style's system prompt says the task ends (SWE-agent 0.x lists its commands there too)."""


def start_messages(root: Path, style: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": SYSTEM.format(root=root, done=DONE[style])},
        {"role": "user", "content": TASK},
    ]


def calls_in_text(text: str, style: str) -> list[tuple[str, dict[str, Any]]]:
    """The calls a reply wrote as JSON text, as an agent that reads them itself finds them: each
    object in the text, fenced or bare or in `<tool_call>` tags, that names an offered tool and
    gives its arguments as an object (`{"name": "execute_bash", "arguments": {"command": ...}}`,
    as Qwen2.5-Coder-1.5B writes them on llama.cpp, which returns them as the reply's content).
    The recovery bench's `alone` arm: the model server with no proxy, the agent salvaging."""
    names = {t["function"]["name"] for t in TOOLS[style]}
    decoder = json.JSONDecoder()
    found: list[tuple[str, dict[str, Any]]] = []
    at = text.find("{")
    while at != -1:
        try:
            value, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            at = text.find("{", at + 1)
            continue
        if isinstance(value, dict) and value.get("name") in names:
            args = value.get("arguments", value.get("parameters"))
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except json.JSONDecodeError:
                    args = None
            if isinstance(args, dict):
                found.append((str(value["name"]), args))
        at = text.find("{", end)
    return found


def _classify(
    calls: list[tuple[str, dict[str, Any]]], previous: list[tuple[str, dict[str, Any]]], text: str, style: str
) -> str:
    if not calls:
        return "prose" if text.strip() else "empty"
    names = {t["function"]["name"] for t in TOOLS[style]}
    if any(name not in names for name, _ in calls):
        return "malformed"
    return "repeat" if calls == previous else "call"


def _execute(
    tools: Tools,
    calls: list[tuple[str, tuple[str, dict[str, Any]]]],
    messages: list[dict[str, Any]],
    turn: Turn,
    history: dict[str, tuple[str, bool]],
) -> bool:
    """Run a reply's calls for real, append their results, mark the turn's waste; True when the run is over."""
    over = False
    tools.edited = False
    for call_id, (name, args) in calls:
        before = tree_digest(tools.root)
        result, ended = tools.call(name, args)
        over = over or ended
        messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
        turn.waste = turn.waste or waste_of(name, args, result, before, tree_digest(tools.root), history)
        if ended and not tests_pass(tools.root):
            turn.waste = "finish_failing"
    return over


def _start_history(messages: list[dict[str, Any]], root: Path) -> dict[str, tuple[str, bool]]:
    """The calls a start already ran, for `waste_of`: its last call saw the files as they are."""
    history: dict[str, tuple[str, bool]] = {}
    last = next((m for m in reversed(messages) if m["role"] == "assistant" and m.get("tool_calls")), None)
    if last is not None and messages[-1]["role"] == "tool":
        function = last["tool_calls"][-1]["function"]
        digest = tree_digest(root)
        waste_of(function["name"], json.loads(function["arguments"]), messages[-1]["content"], digest, digest, history)
    return history


def _calls(message: Any, style: str, salvage: bool, turn: int) -> tuple[list[tuple[str, dict[str, Any]]], list[str], bool]:  # fmt: skip
    """The reply's calls (name, arguments), their ids, and whether the agent read them in the text
    itself (`salvage`, the reply having made none)."""
    calls = []
    for call in message.tool_calls or []:
        try:
            args = json.loads(call.function.arguments or "{}")
        except json.JSONDecodeError:
            args = {"_unparsed": call.function.arguments}
        calls.append((call.function.name, args if isinstance(args, dict) else {"_value": args}))
    if salvage and not calls and (own := calls_in_text(message.content or "", style)):
        return own, [f"call_agent_{turn}_{n}" for n in range(len(own))], True
    return calls, [call.id for call in message.tool_calls or []], False


def run_agent(
    base_url: str,
    root: Path,
    style: str,
    messages: list[dict[str, Any]],
    max_turns: int,
    seed: int,
    temperature: float = 0.7,
    on_turn: Callable[[Turn], None] | None = None,
    max_tokens: int = 256,
    salvage: bool = False,
) -> Run:
    """Talk to the model at `base_url` from `messages` until it finishes, is handed back, or
    `max_turns`. `salvage`: a reply with no tool call whose text writes calls as JSON is read
    for them by the agent itself (`calls_in_text`), as the proxy's salvage would."""
    client = openai.OpenAI(base_url=base_url, api_key="local", max_retries=0, timeout=600)
    tools = Tools(root, style)
    run = Run()
    previous: list[tuple[str, dict[str, Any]]] = []
    history = _start_history(messages, root)
    format_errors = 0
    for _ in range(max_turns):
        run.sent.append(len(messages))
        try:
            raw = client.chat.completions.with_raw_response.create(
                model="local",
                messages=messages,  # type: ignore[arg-type]
                tools=TOOLS[style],  # type: ignore[arg-type]
                temperature=temperature,
                seed=seed,
                max_tokens=max_tokens,
            )
        except openai.APIError as exc:
            run.end = f"error: {exc}"[:120]
            break
        reply = raw.parse()
        headers = raw.headers
        message = reply.choices[0].message
        text = message.content or ""
        calls, ids, own = _calls(message, style, salvage, len(run.turns))
        turn = Turn(
            kind=_classify(calls, previous, text, style),
            calls=calls,
            completion_tokens=reply.usage.completion_tokens if reply.usage else 0,
            trips=headers.get("x-repair-trips", ""),
            salvaged=bool(headers.get("x-repair-salvaged")) or bool(own),
            outcome=headers.get("x-repair-outcome", ""),
            text=text,
            generations=1 + sum(int(n) for n in re.findall(r":(\d+)", headers.get("x-repair-retries", ""))),
        )
        if turn.kind in ("prose", "empty", "malformed"):
            turn.waste = turn.kind
        run.turns.append(turn)
        if turn.outcome == "incomplete":
            run.end = "handed_back"
            break
        if not calls:
            messages.append({"role": "assistant", "content": text})
            messages.append({"role": "user", "content": NUDGE[style]})
            format_errors += 1
            if style != "openhands" and format_errors >= 3:
                run.end = "format_error"
                break
            if on_turn:
                on_turn(turn)
            continue
        format_errors = 0
        if own:  # the calls the agent read in the text, as it keeps them in its history
            written = [
                {"id": i, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                for i, (name, args) in zip(ids, calls, strict=True)
            ]
            messages.append({"role": "assistant", "content": "", "tool_calls": written})
        else:
            messages.append(message.model_dump(exclude_none=True, include={"role", "content", "tool_calls"}))
        over = _execute(tools, list(zip(ids, calls, strict=True)), messages, turn, history)
        turn.green = tools.edited and tests_pass(root)
        previous = calls
        if on_turn:
            on_turn(turn)
        if over:
            run.end = "finished"
            break
    graded = grade(root)
    run.solved, run.tests, run.hidden = graded.solved, graded.tests, graded.hidden
    return run


def stuck_start(root: Path, style: str, edits: list[list[str]], timeout: float = 120.0) -> list[dict[str, Any]]:
    """The transcript of a real stuck point, executed for real: the test fails, an edit that changes
    nothing that matters, the same failure, another such edit, the same failure a third time."""
    messages = start_messages(root, style)
    tools = Tools(root, style, timeout=timeout)
    shell = SHELL[style]
    steps: list[tuple[str, dict[str, Any]]] = [(shell, {"command": "python -m pytest"})]
    for old, new in edits:
        target = next(p for p in sorted(root.glob("*.py")) if old in p.read_text())
        if style == "openhands":
            steps.append(
                ("str_replace_editor", {"command": "str_replace", "path": str(target), "old_str": old, "new_str": new})
            )
        else:
            script = f"import pathlib; p = pathlib.Path({str(target)!r}); p.write_text(p.read_text().replace({old!r}, {new!r}))"
            steps.append((shell, {"command": f"python3 -c {shlex.quote(script)}"}))
        steps.append((shell, {"command": "python -m pytest"}))
    for n, (name, args) in enumerate(steps):
        call_id = f"call_stuck_{n}"
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": tools.call(name, args)[0]})
    return messages
