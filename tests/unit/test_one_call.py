"""Every pinned call is one call: where the proxy pins a generation (a detector's `force`, a gate's
held retry, the block rung's re-ask), the call its instruction names is the call its schema and
`tool_choice` allow. Walked on the recovery bench's own repositories (train part), from the
bench's real stuck start, each tool run for real in a copy, in the agent's styles.

Seen (issue 51): at the stuck force the instruction said "First look at backoff.py as it is
now: call str_replace_editor with {"command": "view", ...}" while the schema sent with it allowed
only `"command": "str_replace"`; the model wrote a `str_replace` with no `old_str`, and the turn
was lost.

The named call is the first `call NAME with {...}` of the instruction; what it asks the model to
write ("with old_str one of those lines, ... and new_str that line changed") the schema requires
(left optional, the model wrote a `str_replace` with no `old_str`); what it leaves to the model
is filled as the instruction says (`one of those lines`: each quoted line in turn; `that line
changed`: the line with a change), and the whole is checked with jsonschema, each `pattern` read
on the JSON text between the string's quotes, as llama.cpp reads it (`writing.kept`).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from tiny_agent import REPOS, TOOLS, Tools, copy_repo, run_shell, stuck_start, tree_digest

from proxy.dialects import CHAT, Planned, plan_offline
from proxy.engine.core import Engine
from proxy.engine.detectors import REGISTRY
from proxy.engine.plan.reply import Gate, ReplyView, judge
from proxy.settings.policy import policy_from_mapping

_NAMED = re.compile(r"call (?P<name>[A-Za-z_][\w.-]*) with (?=\{)")
_RUNS: dict[str, str] = {}
"""pytest's output per state of a repository's files: a walk re-runs the same failing check often."""


def _json_text_pattern(
    validator: Any, pattern: str, instance: Any, _schema: Any
) -> Iterator[jsonschema.ValidationError]:
    if isinstance(instance, str) and re.search(pattern, json.dumps(instance, ensure_ascii=False)[1:-1]) is None:
        yield jsonschema.ValidationError(f"{instance!r} (as JSON text) does not match {pattern[:80]!r}...")


LLAMA_CPP = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": _json_text_pattern})
"""A validator that reads `pattern` on the JSON text of a string, as the server's grammar holds it."""


class Agent:
    """A copy of a bench repository at its real stuck start, and calls run on it for real."""

    def __init__(self, repo: str, style: str, root: Path) -> None:
        self.root = copy_repo(repo, root)
        self.style = style
        self.tools = Tools(self.root, style, timeout=600)  # the walk wants pytest's output, however slow
        edits = json.loads((REPOS / repo / "stuck.json").read_text())["edits"]
        self.messages = stuck_start(self.root, style, edits, timeout=600)
        self.code = next(p for p in sorted(self.root.glob("*.py")) if p.name != "conftest.py")
        self.test = next(self.root.glob("tests/test_*.py"))

    @property
    def shell(self) -> str:
        return "execute_bash" if self.style == "openhands" else "bash"

    def call(self, name: str, args: dict[str, Any]) -> Agent:
        call_id = f"call_walk_{len(self.messages)}"
        function = {"name": name, "arguments": json.dumps(args)}
        self.messages.append({"role": "assistant", "content": "", "tool_calls": [{"id": call_id, "type": "function", "function": function}]})  # fmt: skip
        if name == self.shell and args.get("command") == "python -m pytest":
            key = tree_digest(self.root)
            if key not in _RUNS:
                _RUNS[key] = self.tools.call(name, args)[0]
            result = _RUNS[key]
        else:
            result = self.tools.call(name, args)[0]
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
        return self

    def run(self) -> Agent:
        return self.call(self.shell, {"command": "python -m pytest"})

    def read(self, path: Path) -> Agent:
        if self.style == "openhands":
            return self.call("str_replace_editor", {"command": "view", "path": str(path)})
        return self.call("bash", {"command": f"cat {path.relative_to(self.root)}"})

    def edit(self, old: str, new: str) -> Agent:
        if self.style == "openhands":
            args = {"command": "str_replace", "path": str(self.code), "old_str": old, "new_str": new}
            return self.call("str_replace_editor", args)
        return self.call("bash", {"command": f"sed -i 's/{old}/{new}/' {self.code.name}"})

    def planned(self, policy: str = "") -> Planned:
        tools = TOOLS[self.style]
        body = {"model": "qwen", "messages": self.messages, "tools": tools, "seed": 1}
        table = _toml(policy)
        patterns = table.setdefault("patterns", {})
        for name in (p.name for p in REGISTRY):  # most run in shadow by default: each walked acting, as it pins when on
            patterns[name] = {"mode": "act", **patterns.get(name, {})}
        engine = Engine.of(policy_from_mapping(table, "walk"))
        planned = plan_offline(engine, CHAT, json.dumps(body).encode(), {})
        assert planned is not None
        return planned


def _toml(text: str) -> dict[str, Any]:
    import tomllib

    return tomllib.loads(text)


def named_call(directive: str) -> tuple[str, dict[str, Any]] | None:
    """The first call the instruction names: `call NAME with {...}`."""
    found = _NAMED.search(directive)
    if found is None:
        return None
    arguments, _end = json.JSONDecoder().raw_decode(directive, found.end())
    return found["name"], arguments


def completions(directive: str, name: str, arguments: dict[str, Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The named call with what it leaves to the model written as the instruction asks: each line
    it quotes as the one to change, changed."""
    options = schema.get("anyOf", [schema])
    chosen = next(o for o in options if o["properties"]["name"].get("enum") == [name])
    declared = chosen["properties"]["arguments"]
    required = declared.get("required", [])
    for key in declared.get("properties", {}):  # what it asks the model to write, the schema must ask for too
        if key not in arguments and re.search(rf"\b(?:with|and) {re.escape(key)}\b", directive):
            assert key in required, f"{key} is asked for but may be left out: {directive}"
    left = [k for k in required if k not in arguments]
    filled = [dict(arguments)]
    for key in left:
        spec = declared["properties"].get(key, {})
        if "enum" in spec:  # one of the quoted lines: the instruction quotes each, and only those
            for value in spec["enum"]:
                assert f"\n{value}\n" in f"\n{directive}\n", f"{value!r} is offered but not quoted"
            filled = [{**f, key: value} for f in filled for value in spec["enum"]]
        else:  # what the model writes: the line it replaces, changed (or a word, where nothing is replaced)
            filled = [{**f, key: f"{f.get('old_str', 'x')}  # changed"} for f in filled]
    return filled


def assert_one_call(directive: str, body: dict[str, Any], named: bool = True) -> None:
    """What was sent names one call: its tool is `tool_choice`'s, and the schema accepts it."""
    call = named_call(directive)
    schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
    choice = body.get("tool_choice")
    if call is None:
        assert not named, f"no call named in: {directive}"
        return
    name, arguments = call
    if isinstance(choice, dict):
        assert choice["function"]["name"] == name, (choice, directive)
    if schema is None:  # no arguments held (at most the tool, checked above): nothing to disagree with
        assert choice in (None, "auto", "required") or isinstance(choice, dict), (choice, directive)
        return
    for completed in completions(directive, name, arguments, schema):
        errors = [e.message for e in LLAMA_CPP(schema).iter_errors({"name": name, "arguments": completed})]
        assert not errors, (directive, completed, errors)


def _force_text(planned: Planned, pattern: str | None = None) -> str:
    decision = planned.decision
    forced = [t for t in decision.new_trips if t.action.value == "force" and pattern in (None, t.pattern.name)]
    assert forced, [(t.pattern.name, t.action.value) for t in decision.new_trips]
    return next(i.text for i in reversed(decision.placed) if i.pattern == forced[-1].pattern.name)


def _forced(planned: Planned, pattern: str) -> bool:
    return any(t.pattern.name == pattern and t.action.value == "force" for t in planned.decision.new_trips)


def _until_forced(agent: Agent, step: Callable[[Agent], Agent], pattern: str, policy: str = "") -> Planned:
    """`step` taken until `pattern` forces (at most 12 times): its rungs are where they are."""
    for _ in range(12):
        planned = step(agent).planned(policy)
        if _forced(planned, pattern):
            return planned
    raise AssertionError(f"{pattern} never forced")


def _stuck_to_force(agent: Agent) -> Agent:
    """From the stuck start (the third failure): two more identical runs, the force rung's streak."""
    return agent.run().run()


def _everything_read(agent: Agent) -> Agent:
    return agent.read(agent.test).read(agent.code)


STAGES = {
    "the failing test unread": lambda a: a,
    "everything read": _everything_read,
    # the code changed since it was seen, the failure the same: the look first (issue 51's case)
    "the code changed since it was read": lambda a: _harmless(_everything_read(a)),
}


def _harmless(agent: Agent) -> Agent:
    """An edit of the code that leaves the failure as it is: its stuck start's first, undone; in
    the one shell, a comment added at its end."""
    if agent.style == "bash":
        return agent.call("bash", {"command": f"echo '# checked' >> {agent.code.name}"})
    old, new = json.loads((REPOS / agent.root.name / "stuck.json").read_text())["edits"][0]
    return agent.edit(new, old)


@pytest.fixture(params=["stack", "bank", "vowels", "temps"])
def repo(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("stage", list(STAGES))
@pytest.mark.parametrize("style", ["openhands", "bash"])
def test_the_stuck_force_pins_the_call_its_instruction_names(repo: str, style: str, stage: str, tmp_path: Path) -> None:
    agent = _stuck_to_force(STAGES[stage](Agent(repo, style, tmp_path)))
    planned = agent.planned()
    text = _force_text(planned)
    assert_one_call(text, json.loads(planned.body), named=style == "openhands" or stage != "everything read")


@pytest.mark.parametrize("stage", list(STAGES))
def test_the_gates_held_retries_and_the_block_rungs_re_ask_pin_the_call_they_name(
    repo: str, stage: str, tmp_path: Path
) -> None:
    """Right after a failure (nothing run since): the finish gate's retry, the action gate's, and
    the re-ask of the failing check proposed again, each as sent."""
    agent = STAGES[stage](Agent(repo, "openhands", tmp_path)).run()
    planned = agent.planned()
    gates = planned.decision.reply.gates
    for gate in (Gate.FINISH, Gate.ACTION):
        sent = json.loads(planned.retry(gate))
        assert_one_call(sent["messages"][-1]["content"], sent)
    rerun = json.dumps({"command": "python -m pytest"})
    refusal = judge(ReplyView("", ("execute_bash",), (rerun,)), planned.decision.reply).refusal
    assert refusal is not None and Gate.BLOCK in gates
    sent = json.loads(planned.retry(Gate.BLOCK, refusal=refusal))
    assert_one_call(sent["messages"][-1]["content"], sent)


def test_a_copy_of_the_held_lines_is_re_asked_for_one_line_changed_as_one_call(repo: str, tmp_path: Path) -> None:
    """`pointless_call`'s re-ask of an edit that replaced the lines with themselves (issue 51: 8 of
    the 14 edits the proxy asked for): it says so, and names the one held call."""
    agent = _everything_read(Agent(repo, "openhands", tmp_path))
    lines = agent.code.read_text().strip()
    copy = {"command": "str_replace", "path": str(agent.code), "old_str": lines, "new_str": lines}
    agent = agent.call("str_replace_editor", copy).run()
    planned = agent.planned()
    refusal = judge(ReplyView("", ("str_replace_editor",), (json.dumps(copy),)), planned.decision.reply).refusal
    assert refusal is not None and refusal.pattern == "pointless_call"
    sent = json.loads(planned.retry(Gate.BLOCK, refusal=refusal))
    assert "that replaced the lines with themselves" in sent["messages"][-1]["content"]
    assert_one_call(sent["messages"][-1]["content"], sent)


def test_a_not_found_edit_is_re_asked_for_the_lines_it_meant_as_one_call(repo: str, tmp_path: Path) -> None:
    """`repeat_failed_call`'s re-ask: the same edit sent again after "did not appear verbatim"."""
    agent = _everything_read(Agent(repo, "openhands", tmp_path))
    line = next(t for t in agent.code.read_text().splitlines() if "return" in t or "=" in t).strip()
    wrong = {"command": "str_replace", "path": str(agent.code), "old_str": line + "  ", "new_str": line + " # x"}
    planned = agent.call("str_replace_editor", wrong).planned()
    refusal = judge(ReplyView("", ("str_replace_editor",), (json.dumps(wrong),)), planned.decision.reply).refusal
    assert refusal is not None
    sent = json.loads(planned.retry(Gate.BLOCK, refusal=refusal))
    assert_one_call(sent["messages"][-1]["content"], sent)


FORCING = {
    "reverify_owed": '[patterns.reverify_owed]\naction = "force"\n',
    "format_error_loop": "",
    "read_stagnation": '[patterns.read_stagnation]\naction = "force"\n',
}


def _nag(agent: Agent) -> Agent:
    agent.messages += [
        {"role": "assistant", "content": "I will fix it."},
        {"role": "user", "content": "Your last reply had no tool call. Continue with the task: call one of the tools."},
    ]
    return agent


def test_every_other_detectors_force_names_no_call_its_schema_refuses(tmp_path: Path) -> None:
    """The other patterns that may force, each walked until it does: `reverify_owed` (an edit,
    then other work and no re-run: the re-run), `format_error_loop` (the agent's own complaint,
    again and again: any call, `ls` for an example), and `read_stagnation` (reads and no change:
    an edit tool, no call named)."""
    edited = Agent("stack", "openhands", tmp_path / "a")
    edited.read(edited.code).edit("self.items = list()", "self.items = []")
    planned = _until_forced(edited, lambda a: a.read(a.test), "reverify_owed", FORCING["reverify_owed"])
    assert_one_call(_force_text(planned, "reverify_owed"), json.loads(planned.body), named=False)
    nagged = Agent("stack", "openhands", tmp_path / "b")
    planned = _until_forced(nagged, _nag, "format_error_loop")
    assert_one_call(_force_text(planned, "format_error_loop"), json.loads(planned.body))
    reading = Agent("stack", "openhands", tmp_path / "c")
    files = [reading.code, reading.test, reading.root / "pytest.ini", reading.root / "stuck.json", reading.root]
    cycle = iter(files * 3)  # a re-read five reads back: a revisit, not ping_pong's short cycle
    planned = _until_forced(reading, lambda a: a.read(next(cycle)), "read_stagnation", FORCING["read_stagnation"])
    assert_one_call(_force_text(planned, "read_stagnation"), json.loads(planned.body), named=False)


def test_the_done_gate_s_retry_pins_the_tool_of_the_run_it_names(tmp_path: Path) -> None:
    """An edit landed on the failure and the check was not re-run: the done gate's retry names the
    failing run (a command, not a call) and pins the tool that runs it; that tool with that
    command is what its schema accepts."""
    agent = _everything_read(Agent("stack", "openhands", tmp_path)).run()
    agent.edit("self.items = list()", "self.items = []")
    planned = agent.planned()
    assert Gate.DONE in planned.decision.reply.gates
    sent = json.loads(planned.retry(Gate.DONE))
    text = sent["messages"][-1]["content"]
    assert text.endswith("Run it now, exactly as before: python -m pytest"), text
    assert sent["tool_choice"]["function"]["name"] == "execute_bash"
    call = f"call execute_bash with {json.dumps({'command': 'python -m pytest'})}"
    assert_one_call(call, sent)


def test_the_walk_reads_nothing_outside_the_workspace(tmp_path: Path) -> None:
    """A collection error after an edit broke the import: the step to read is the workspace file
    that failed to import, never the interpreter's `importlib` (issue 51: a view of its lines
    111-141 pinned twice)."""
    agent = _everything_read(Agent("stack", "openhands", tmp_path))
    agent.edit("class Stack:", "class Stak:").run().run()
    assert "importlib" in run_shell("python -m pytest", agent.root)[1]  # pytest shows the frame
    planned = agent.planned()
    for gate in (Gate.FINISH, Gate.ACTION):
        sent = json.loads(planned.retry(gate))
        text = sent["messages"][-1]["content"]
        named = named_call(text)  # the failure it quotes may show pytest's own frames; the step it pins may not
        assert named is not None and named[1].get("path") == str(agent.code), text
        step = text[text.index("call str_replace_editor") - 200 :]
        assert "importlib" not in step and "/lib/python" not in step, text
        assert_one_call(text, sent)
