"""Calls written in the reply's text, read as sent: mini-swe-agent 1.x (one ```bash block,
`<returncode>` results; 2.x's text-based model tags it ```mswea_bash_command), SWE-agent's thought-action (a fence; 0.x results end with its
`bash-$` prompt, 1.x results start `OBSERVATION:`), and XML function calls (SWE-agent,
OpenHands without native tools). The same run written in each protocol trips exactly as the
same run made with tool calls; a reply that only shows code is no call."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from scenario_loader import analyse

from proxy.engine.core import Engine
from proxy.engine.plan.reply import Gate, ReplyView, judge
from proxy.engine.text.protocols import FORMS
from proxy.engine.text.transcript import read_turns
from proxy.settings.policy import load_policy

Step = tuple[str, str, int]
"""(command, what it printed, exit code)"""
FAIL = (
    "python reproduce.py",
    'Traceback (most recent call last):\n  File "/testbed/reproduce.py", line 4, in <module>\n'
    "    assert parse('1+1') == 2\nAssertionError",
    1,
)
OTHER_FAIL = (FAIL[0], FAIL[1].replace("AssertionError", "TypeError: unsupported operand"), 1)
EDIT = ("sed -i 's/a - b/a + b/' src/calc.py", "", 0)
EDIT_2 = ("sed -i 's/int(a)/float(a)/' src/calc.py", "", 0)
STUCK = [FAIL, EDIT, FAIL, EDIT_2, FAIL]
PROGRESS = [FAIL, EDIT, FAIL, EDIT_2, OTHER_FAIL]
TASK = "Fix the bug in src/calc.py described in the issue."


def _mini_swe_agent_1(command: str, printed: str, code: int, _n: int) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": f"THOUGHT: next I run it.\n\n```bash\n{command}\n```"},
        {"role": "user", "content": f"<returncode>{code}</returncode>\n<output>\n{printed}\n</output>"},
    ]


def _mini_swe_agent_2(command: str, printed: str, code: int, _n: int) -> list[dict[str, Any]]:
    """mini-swe-agent 2.x's text-based model (`LitellmTextbasedModel`, what it runs a model without
    tool calling on): its fence is tagged `mswea_bash_command` (its `action_regex`)."""
    return [
        {"role": "assistant", "content": f"THOUGHT: next I run it.\n\n```mswea_bash_command\n{command}\n```"},
        {"role": "user", "content": f"<returncode>{code}</returncode>\n<output>\n{printed}\n</output>"},
    ]


def _swe_agent_0(command: str, printed: str, _code: int, _n: int) -> list[dict[str, Any]]:
    footer = "(Open file: /testbed/src/calc.py)\n(Current directory: /testbed)\nbash-$"
    return [
        {"role": "assistant", "content": f"DISCUSSION\nLet me check.\n\n```\n{command}\n```"},
        {
            "role": "user",
            "content": f"{printed or 'Your command ran successfully and did not produce any output.'}\n{footer}",
        },
    ]


def _swe_agent_1(command: str, printed: str, _code: int, _n: int) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": f"Let me check.\n\n```\n{command}\n```"},
        {"role": "user", "content": f"OBSERVATION:\n{printed}"},
    ]


def _xml_functions(command: str, printed: str, _code: int, _n: int) -> list[dict[str, Any]]:
    call = f"<function=bash>\n<parameter=command>{command}</parameter>\n</function>"
    return [
        {"role": "assistant", "content": f"Running it.\n{call}"},
        {"role": "user", "content": f"OBSERVATION:\n{printed}"},
    ]


def _tool_calls(command: str, printed: str, code: int, n: int) -> list[dict[str, Any]]:
    call = {
        "id": f"call_{n}",
        "type": "function",
        "function": {"name": "bash", "arguments": orjson.dumps({"command": command}).decode()},
    }
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {
            "role": "tool",
            "tool_call_id": f"call_{n}",
            "content": f"<returncode>{code}</returncode>\n<output>\n{printed}\n</output>",
        },
    ]


PROTOCOLS: dict[str, Callable[[str, str, int, int], list[dict[str, Any]]]] = {
    "mini-swe-agent 1.x": _mini_swe_agent_1,
    "mini-swe-agent 2.x text-based": _mini_swe_agent_2,
    "SWE-agent 0.x thought-action": _swe_agent_0,
    "SWE-agent 1.x thought-action": _swe_agent_1,
    "XML function calls": _xml_functions,
}
BASH = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    }
]


def requests(
    steps: list[Step], write: Callable[[str, str, int, int], list[dict[str, Any]]], tools: bool
) -> list[bytes]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": TASK},
    ]
    bodies = []
    for n, (command, printed, code) in enumerate(steps):
        messages += write(command, printed, code, n)
        body: dict[str, Any] = {"model": "m", "messages": messages}
        if tools:
            body["tools"] = BASH
        bodies.append(orjson.dumps(body))
    return bodies


def trips(bodies: list[bytes]) -> list[list[str]]:
    engine = Engine.of(load_policy("mini_swe_agent"))
    out = []
    for body in bodies:
        planned = analyse(engine, body)
        assert planned is not None
        out.append([t.pattern.name for t in planned.decision.new_trips])
    return out


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_run_written_as_text_trips_like_the_same_run_made_with_tool_calls(protocol: str) -> None:
    as_text = trips(requests(STUCK, PROTOCOLS[protocol], tools=False))
    assert as_text == trips(requests(STUCK, _tool_calls, tools=True))
    assert as_text[-1] == ["stuck_same_diagnostic"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_run_written_as_text_that_makes_progress_does_not_trip(protocol: str) -> None:
    assert trips(requests(PROGRESS, PROTOCOLS[protocol], tools=False)) == [[]] * len(PROGRESS)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_each_written_call_is_read_with_its_result(protocol: str) -> None:
    body = orjson.loads(requests(STUCK, PROTOCOLS[protocol], tools=False)[-1])
    turns, _users = read_turns(body["messages"])
    assert [t.calls[0].arguments for t in turns] == [{"command": s[0]} for s in STUCK]
    assert all(FAIL[1].splitlines()[-1] in (t.calls[0].result or "") for t in turns[::2])


def test_a_reply_that_only_shows_code_is_no_call() -> None:
    """A fenced command answered by a person's message (a chat, not an agent's result) is a
    text reply, and so is a fenced block in another language."""
    messages = [
        {"role": "user", "content": "How do I list files?"},
        {"role": "assistant", "content": "Use this:\n\n```bash\nls -la\n```"},
        {"role": "user", "content": "Thanks! And hidden ones?"},
        {"role": "assistant", "content": "Example:\n\n```python\nimport os\nprint(os.listdir('.'))\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\na.py\n</output>"},
    ]
    turns, _users = read_turns(messages)
    assert [t.calls for t in turns] == [(), ()]


def test_a_format_error_answered_by_the_agents_complaint_is_no_call() -> None:
    """mini-swe-agent 1.x answers a reply with two blocks with its format error, not a result:
    the reply is a text reply."""
    messages = [
        {"role": "user", "content": TASK},
        {"role": "assistant", "content": "```bash\nls\n```\nthen\n```bash\ncat a.py\n```"},
        {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."},
    ]
    turns, _users = read_turns(messages)
    assert [t.calls for t in turns] == [()]


def _reply_rules(steps: list[Step], protocol: str, acts: tuple[str, ...] = ()) -> Any:
    """The reply rules after `steps`, under the agent's preset with `acts` acting (most patterns
    ship in shadow, where they refuse nothing)."""
    policy = load_policy("mini_swe_agent")
    patterns = {**policy.patterns, **{name: {**policy.patterns.get(name, {}), "mode": "act"} for name in acts}}
    engine = Engine.of(policy.model_copy(update={"patterns": patterns}))
    planned = None
    for body in requests(steps, PROTOCOLS[protocol], tools=False):
        planned = analyse(engine, body)
    assert planned is not None
    return planned.decision.reply


RERUN = {
    "mini-swe-agent 1.x": f"THOUGHT: run it again.\n\n```bash\n{FAIL[0]}\n```",
    "mini-swe-agent 2.x text-based": f"THOUGHT: run it again.\n\n```mswea_bash_command\n{FAIL[0]}\n```",
    "SWE-agent 0.x thought-action": f"DISCUSSION\nRun it again.\n\n```\n{FAIL[0]}\n```",
    "SWE-agent 1.x thought-action": f"Run it again.\n\n```\n{FAIL[0]}\n```",
    "XML function calls": f"Again.\n<function=bash>\n<parameter=command>{FAIL[0]}</parameter>\n</function>",
}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_failing_check_written_as_text_again_with_nothing_changed_is_refused_and_asked_again_in_the_agents_format(
    protocol: str,
) -> None:
    """The block rung reads a call written in the agent's protocol as it reads a tool call: the
    failing check a fourth time, nothing changed since its three identical failures, is refused,
    and the re-ask asks for one call in the agent's own format (no tools to require or to hold in
    a schema: the agent reads text). Its result is known, so the rung refuses it on its own evidence
    as it ships too (`stuck_same_diagnostic` in shadow), in its own words."""
    shadow = _reply_rules([FAIL] * 3, protocol)
    judged = judge(ReplyView(RERUN[protocol], (), ()), shadow)
    assert judged.gate is Gate.BLOCK and judged.refusal is not None and judged.refusal.owned
    rules = _reply_rules([FAIL] * 3, protocol, ("stuck_same_diagnostic",))
    judgement = judge(ReplyView(RERUN[protocol], (), ()), rules)
    assert judgement.gate is Gate.BLOCK and judgement.refusal is not None
    assert judgement.refusal.pattern == "stuck_same_diagnostic"
    edit = rules.gates[Gate.BLOCK].edit_for(judgement.refusal)
    directive = edit.messages[-1]["content"] if edit.messages else ""
    assert "Your call was not run" in directive and f"Reply with {FORMS[rules.protocol]}." in directive
    assert edit.tool_choice is None and edit.call_schema is None


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_failing_check_written_as_text_after_an_edit_passes(protocol: str) -> None:
    rules = _reply_rules([FAIL] * 3 + [EDIT], protocol, ("stuck_same_diagnostic",))
    assert judge(ReplyView(RERUN[protocol], (), ()), rules).gate is None


LINTED = (
    "edit 3:3\n    return a + b\nend_of_edit",
    "Your proposed edit has introduced new syntax error(s). Please understand the fixes and retry your edit "
    "commmand.\n\nERRORS:\n- E999 IndentationError: unexpected indent\n\nDO NOT re-run the same failed edit "
    "command. Running it again will lead to the same error.",
    1,
)


def test_an_edit_written_as_text_that_the_agents_own_editor_turned_down_is_not_refused_again() -> None:
    """SWE-agent's editor keeps state the proxy does not see (the open file, its window) and its
    linter already turns a bad edit down and says so: sent again, the same edit is the agent's to
    refuse, not the block rung's (on the public runs, CodeR's resolved runs resent such edits)."""
    rules = _reply_rules([FAIL, LINTED, LINTED], "SWE-agent 0.x thought-action")
    reply = f"DISCUSSION\nTry again.\n\n```\n{LINTED[0]}\n```"
    assert judge(ReplyView(reply, (), ()), rules).gate is None


def _actions(bodies: list[bytes]) -> list[str]:
    engine = Engine.of(load_policy("mini_swe_agent"))
    out = []
    for body in bodies:
        planned = analyse(engine, body)
        assert planned is not None
        out += [f"{t.pattern.name}:{t.action.value}" for t in planned.decision.new_trips]
    return out


def test_a_force_rung_for_an_agent_that_writes_its_calls_as_text_is_a_nudge() -> None:
    """`force` pins a tool and `restrict` takes one away: an agent with no tools, writing its
    calls as text, has neither, so those rungs are recorded and counted as what they do, nudges
    (on the public runs: mini-swe-agent 1.x's format-error loops on resolved runs were 'forced')."""
    five = [FAIL] * 5
    assert _actions(requests(five, _tool_calls, tools=True))[-1] == "stuck_same_diagnostic:force"
    assert _actions(requests(five, _mini_swe_agent_1, tools=False))[-1] == "stuck_same_diagnostic:nudge"


def _elided(messages: list[dict[str, Any]], keep: int) -> list[dict[str, Any]]:
    """SWE-agent 0.x's history processor: every observation but the last `keep`, cut to a line."""
    observations = [i for i, m in enumerate(messages) if m["role"] == "user" and "bash-$" in m["content"]]
    cut = set(observations[:-keep])
    return [
        {**m, "content": f"Old output omitted ({len(m['content'].splitlines())} lines)"} if i in cut else m
        for i, m in enumerate(messages)
    ]


def test_swe_agent_0s_elided_observations_are_results_whose_words_are_gone() -> None:
    """A proxy that reads such a history at once (another replica, a restart) took each cut
    observation for the agent's message in place of a reply, three in a row for a format-error
    loop, and forced a call on a working run (tune part, SWE-agent 0.x on Multi-SWE-bench Java:
    378 such trips read at once, none read request by request)."""
    body = orjson.loads(requests(PROGRESS, _swe_agent_0, tools=False)[-1])
    messages = _elided(body["messages"], keep=1)
    turns, users = read_turns(messages)
    assert [u.text for u in users] == [TASK]
    assert [t.calls[0].result for t in turns][:-1] == [""] * (len(PROGRESS) - 1)
    planned = analyse(Engine.of(load_policy("swe_agent")), orjson.dumps({**body, "messages": messages}))
    assert planned is not None and not [
        t for t in planned.decision.state.trips if t.pattern.name == "format_error_loop"
    ]


def test_swe_agent_0s_observations_not_cut_keep_their_words() -> None:
    body = orjson.loads(requests(PROGRESS, _swe_agent_0, tools=False)[-1])
    turns, _users = read_turns(body["messages"])
    assert all(t.calls[0].result for t in turns)


READ = ("cat src/calc.py", "def add(a, b):\n    return a - b", 0)
ACTION_REGEX = {
    "mini-swe-agent 1.x": r"```bash\s*\n(.*?)\n```",
    "mini-swe-agent 2.x text-based": r"```mswea_bash_command\s*\n(.*?)\n```",
}
"""How each agent finds the call in a reply (its `action_regex`): one match, or a format error."""


@pytest.mark.parametrize("protocol", ACTION_REGEX)
def test_a_hand_back_to_an_agent_that_fences_its_calls_is_its_submit_in_its_own_fence(protocol: str) -> None:
    """mini-swe-agent's hand-back is its submit command (the preset's `handback_command`): to an
    agent with tools the proxy answers with that call; to one that writes its calls as text it is
    one block in the agent's own fence, carrying the hand-back, or the agent answers the prose with
    its format complaint and goes on."""
    engine = Engine.of(load_policy("mini_swe_agent"))
    halts = []
    for body in requests([READ] * 8, PROTOCOLS[protocol], tools=False):
        planned = analyse(engine, body)
        assert planned is not None
        halts.append(planned.decision.halt)
    hand = next(h for h in halts if h is not None)
    actions = re.findall(ACTION_REGEX[protocol], hand.text, re.DOTALL)
    assert len(actions) == 1, hand.text
    command, _, rest = actions[0].partition("\n")
    assert command == "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat <<'REPAIR_PROXY_HANDBACK'"
    assert rest.endswith("\nREPAIR_PROXY_HANDBACK") and "INCOMPLETE" in rest
    assert hand.finish_call is None


def test_a_hand_back_in_a_fence_needs_the_presets_command_and_a_fence() -> None:
    """Without a `handback_command` (SWE-agent's preset) the hand-back stays prose."""
    engine = Engine.of(load_policy("swe_agent"))
    for body in requests([READ] * 8, _swe_agent_0, tools=False):
        planned = analyse(engine, body)
        assert planned is not None
        if planned.decision.halt is not None:
            assert "`" * 3 not in planned.decision.halt.text
            return
    pytest.fail("no hand-back")
