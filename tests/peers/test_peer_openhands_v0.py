"""OpenHands' first stuck detector (`openhands/controller/stuck.py`), its cases as transcripts.

Each case is one verdict their `tests/unit/controller/test_is_stuck.py` asserts, on the history
their test builds, rewritten as the OpenAI chat transcript OpenHands' CodeAct agent would send for
it: `CmdRunAction` is an `execute_bash` call, `FileReadAction` a `str_replace_editor` view,
`IPythonRunCellAction` an `execute_ipython_cell` call; an observation is the tool result,
rendered as their conversation memory renders it (an `ErrorObservation` with its footer, an
`AgentCondensationObservation` as a user message); a user `MessageAction` is a user message and
an agent one an assistant reply; null events are left out, as their detector leaves them out.
The texts and files are ours; the commands (`ls`, `pwd`) and the short user messages are
theirs where a verdict may hang on them.

Their two modes: headless checks the whole history with user messages filtered out; interactive
checks only what follows the last user message. A case's `since` is that window.
"""

from __future__ import annotations

import pytest
from peer_kit import Case, Convo, check, function

TOOLS = [
    function("execute_bash", command="string"),
    function("str_replace_editor", command="string", path="string"),
    function("execute_ipython_cell", code="string"),
]
ERROR = "\n[Error occurred in processing last action]"
"""How OpenHands renders an `ErrorObservation` to the model: its text, then this footer."""
JUPYTER = "\n[Jupyter current working directory: /workspace]\n[Jupyter Python interpreter: /usr/bin/python3]"
LISTING = "notes.txt\ntodo.txt"
CONDENSED = "The prompt was cut down to fit within the context window."


def bash(c: Convo, command: str, output: str) -> Convo:
    return c.call("execute_bash", {"command": command}, output)


def view(c: Convo, path: str, content: str) -> Convo:
    return c.call("str_replace_editor", {"command": "view", "path": path}, content)


def cell(c: Convo, code: str, output: str) -> Convo:
    return c.call("execute_ipython_cell", {"code": code}, output)


CASES: list[Case] = []


def case(
    name: str,
    convo: Convo,
    stuck: bool,
    since: int = 0,
    differs: str = "",
    policy: dict | None = None,
    by: tuple[str, ...] = (),
) -> None:
    CASES.append(Case(name, convo.copy(), stuck, since, differs, policy, by))


# test_history_too_short: a user message, one command and its output.
c = bash(Convo("Hello", TOOLS), "ls", LISTING)
case("test_history_too_short", c, False)

# test_interactive_mode_resets_after_user_message: four identical `ls` with empty output, a user
# message, then two, then four after it.
c = Convo("List the workspace.", TOOLS)
for _ in range(4):
    bash(c, "ls", "")
case("test_interactive_mode_resets_after_user_message:4-same-headless", c, True, by=("repeat_call",))
case("test_interactive_mode_resets_after_user_message:4-same-interactive", c, True, since=2, by=("repeat_call",))
c.user("Hello")
after_user = c.mark
case("test_interactive_mode_resets_after_user_message:user-message-interactive", c, False, since=after_user)
case("test_interactive_mode_resets_after_user_message:user-message-headless", c, True, by=("repeat_call",))
for _ in range(2):
    bash(c, "ls", "")
case("test_interactive_mode_resets_after_user_message:2-more-interactive", c, False, since=after_user)
for _ in range(2):
    bash(c, "ls", "")
case(
    "test_interactive_mode_resets_after_user_message:4-more-interactive", c, True, since=after_user, by=("repeat_call",)
)

# test_is_stuck_repeating_action_observation: an agent message, `ls` twice, a user message, `ls`
# twice more: the user message does not count (headless), the fourth `ls` is stuck.
c = Convo("Have a look at the workspace.", TOOLS).say("Hello")
for _ in range(2):
    bash(c, "ls", "")
c.user("Done")
case("test_is_stuck_repeating_action_observation:2-then-user", c, False)
bash(c, "ls", "")
case("test_is_stuck_repeating_action_observation:3", c, False)
bash(c, "ls", "")
case(
    "test_is_stuck_repeating_action_observation:4-across-user-message",
    c,
    True,
    differs="a person's message starts a new episode for us (the count after it is 2); headless OpenHands "
    "filters user messages out and counts 4",
)

# test_is_stuck_repeating_action_error: the same failing command four times, errors worded
# differently, a user message among them: the last three actions alike and all errors is stuck.
c = Convo("Have a look at the workspace.", TOOLS).say("Hello")
bash(c, "frobnicate --all", "frobnicate: no such program" + ERROR)
bash(c, "frobnicate --all", "frobnicate still missing, or something else went wrong" + ERROR)
c.user("Done")
bash(c, "frobnicate --all", "An unexpected error" + ERROR)
bash(c, "frobnicate --all", "frobnicate: no such program" + ERROR)
case(
    "test_is_stuck_repeating_action_error",
    c,
    True,
    differs="OpenHands' error footer is no failure sign to us, so these are four successes with three different "
    "outputs (no repeat); and the user message starts a new episode; they count any three errors of one action",
)

# The IPython syntax-error cases: the same cell (an edit helper call whose string is never
# closed) run again and again, and the syntax error it gets.
SNIPPET = (
    '\nedit_file_by_replace(\n    \'shapes.py\',\n    to_replace="""def area(width, height):\n'
    "    if width <= 0:\n        return 0\n"
)


def syntax_errors(message: str, moving: bool, times: int = 4) -> Convo:
    """The cell `times` times; its error's line the same each time, or moving (and the output
    padded with a growing number of blank lines) when `moving`."""
    c = Convo("Fix area() in shapes.py.", TOOLS)
    for i in range(times):
        line = (i + 1) * 10 if moving else 42
        padding = "\n" * (i + 1) if moving else ""
        output = (
            f'  Cell In[1], line {line}\n    to_replace="""def perimeter(width, height):\n                ^\n'
            f"{message}{padding}{JUPYTER}"
        )
        cell(c, SNIPPET, output)
    return c


def unterminated(moving: bool, times: int = 4) -> Convo:
    c = Convo("Fix area() in shapes.py.", TOOLS)
    for i in range(times):
        line = (i + 1) * 10 if moving else 1
        output = (
            f'print("  Cell In[1], line {line}\nhi there\n       ^\n'
            f"SyntaxError: unterminated string literal (detected at line {line}){JUPYTER}"
        )
        cell(c, SNIPPET, output)
    return c


MOVING = (
    "our result digest sets line numbers and blank lines aside (run-to-run noise to us), so the outputs are one "
    "and repeat_call trips on the third identical cell; they compare the error lines verbatim"
)
COMMA = "SyntaxError: invalid syntax. Perhaps you forgot a comma?"
INCOMPLETE = "SyntaxError: incomplete input"

case("test_is_stuck_invalid_syntax_error", syntax_errors(COMMA, moving=False), True, by=("repeat_call",))
case("test_is_not_stuck_invalid_syntax_error_random_lines", syntax_errors(COMMA, moving=True), False, differs=MOVING)
case(
    "test_is_not_stuck_invalid_syntax_error_only_three_incidents",
    syntax_errors(COMMA, moving=True, times=3),
    False,
    differs=MOVING,
)
case("test_is_stuck_incomplete_input_error", syntax_errors(INCOMPLETE, moving=False), True, by=("repeat_call",))
case("test_is_not_stuck_incomplete_input_error", syntax_errors(INCOMPLETE, moving=True), False, differs=MOVING)
case(
    "test_is_not_stuck_ipython_unterminated_string_error_random_lines", unterminated(moving=True), False, differs=MOVING
)
case(
    "test_is_not_stuck_ipython_unterminated_string_error_only_two_incidents",
    unterminated(moving=False, times=2),
    False,
)
case("test_is_stuck_ipython_unterminated_string_error", unterminated(moving=False), True, by=("repeat_call",))

# test_is_not_stuck_ipython_syntax_error_not_at_end: the same one-line cell four times; the
# error's line moves (1, 1, 3, 2) and other output follows it.
c = Convo("Print a greeting.", TOOLS)
for line, tail in ((1, "some more output"), (1, "and more output still"), (3, "that is all"), (2, "the end")):
    cell(
        c,
        'print("hi',
        f'print("hi\n       ^\nSyntaxError: unterminated string literal (detected at line {line})\n{tail}',
    )
case("test_is_not_stuck_ipython_syntax_error_not_at_end", c, False)

# test_is_stuck_repeating_action_observation_pattern: `ls` and a read, alternating, three times
# each, a user message among them. Their user message repeats the first one word for word, which
# we take for boilerplate (it starts no new episode); the variant words it anew.
for variant, again in (("", "Come on"), (":variant-new-words", "Carry on with it")):
    c = Convo("Come on", TOOLS)
    for _ in range(2):
        bash(c, "ls", LISTING)
        view(c, "notes.txt", "Buy milk")
    c.user(again)
    bash(c, "ls", LISTING)
    view(c, "notes.txt", "Buy milk")
    if variant:
        case(
            "test_is_stuck_repeating_action_observation_pattern" + variant,
            c,
            True,
            differs="a person's new message starts a new episode for us (the alternation restarts: 2 of 6); "
            "headless OpenHands filters user messages out",
        )
    else:
        case("test_is_stuck_repeating_action_observation_pattern", c, True, by=("ping_pong",))

# test_is_stuck_not_stuck: ls, a read, pwd, another read; a user message; pwd and the read again.
c = Convo("Have a look at the workspace.", TOOLS).say("Hello")
bash(c, "ls", LISTING)
view(c, "notes.txt", "Buy milk")
bash(c, "pwd", "/home/user")
view(c, "todo.txt", "Call the plumber")
c.user("Done")
bash(c, "pwd", "/home/user")
view(c, "todo.txt", "Call the plumber")
case("test_is_stuck_not_stuck", c, False)

# test_is_stuck_monologue: small talk, then three identical agent replies in a row; then an
# observation arrives and two more identical replies follow it. (Their history holds an
# `echo` action without its result until then: in function-calling mode OpenHands keeps a call
# back from the transcript until its result comes, so the call and its result come after the
# three replies.)
c = Convo("Good morning!", TOOLS).say("Good morning!").user("How is it going?")
for _ in range(3):
    c.say("Fine, thank you for asking.")
case("test_is_stuck_monologue:3-same-replies", c, True, by=("monologue",))
before_output = c.mark
c.call("execute_bash", {"command": "echo 42"}, "Right, I was looping, but not any more.", text="Not me, the other one.")
for _ in range(2):
    c.say("Fine, thank you for asking.")
case("test_is_stuck_monologue:observation-between", c, False, since=before_output)

# The context-window loop: the history trimmed again and again with nothing else happening.
CONTEXT = (
    "a loop of context-window errors never reaches the model: no reply, no turn, and we read turns (the agent's "
    "condensation notes are user messages to us)"
)
c = Convo("Hello", TOOLS)
for _ in range(10):
    c.user(CONDENSED)
case("test_is_stuck_context_window_error_loop", c, True, differs=CONTEXT)

c = Convo("Hello", TOOLS)
for i in range(10):
    c.user(CONDENSED)
    if i < 9:
        bash(c, f"ls dir{i}", LISTING)
        if i % 2 == 0:
            view(c, f"part{i}.txt", f"Part {i} of the notes")
case("test_is_not_stuck_context_window_error_with_other_events", c, False)

c = Convo("Hello", TOOLS)
for _ in range(9):
    c.user(CONDENSED)
case("test_is_not_stuck_context_window_error_less_than_ten", c, False)

c = Convo("Hello", TOOLS)
for i in range(10):
    c.user(CONDENSED)
    if i < 9:
        c.user(f"Keep going ({i})")
case("test_is_stuck_context_window_error_with_user_messages", c, True, differs=CONTEXT)

c = Convo("Hello", TOOLS)
for _ in range(10):
    c.user(CONDENSED)
c.user("Keep going")
case("test_is_not_stuck_context_window_error_in_non_headless:headless", c, True, differs=CONTEXT)
case("test_is_not_stuck_context_window_error_in_non_headless:interactive", c, False, since=c.mark)


@pytest.mark.parametrize("case", [k.param() for k in CASES])
def test_openhands_v0_case(case: Case) -> None:
    check(case)
