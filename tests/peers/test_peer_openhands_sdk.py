"""OpenHands' newer `StuckDetector` (software-agent-sdk,
`openhands-sdk/openhands/sdk/conversation/stuck_detector.py`), its cases as transcripts.

Each case is one verdict of `tests/cross/test_stuck_detector.py`,
`tests/cross/test_stuck_detector_config.py` or `tests/sdk/conversation/local/test_stuck_detector_nudge.py`,
on the events their test builds, rewritten as the chat transcript the SDK's agent sends: an
`ActionEvent` is an assistant message (its thought as text) with the tool call, an
`ObservationEvent` the tool result (a terminal's output ends with its exit-code line), an
`AgentErrorEvent` the tool result holding the error, a `MessageEvent` a user or assistant message,
an environment message (their corrective nudge) a user message. The texts are ours; the
commands (`ls`, `pwd`, `whoami`, `date`) are theirs.

Their detector looks only at what follows the last user message (their nudges are not from the
user): a case's `since` is that window. Defaults: 4 identical action/observation pairs, 3 errors
of one action nudge and a 4th is stuck, 3 agent messages in a row, 6 alternating.
"""

from __future__ import annotations

import pytest
from peer_kit import Case, Convo, check, function

TOOLS = [function("terminal", command="string")]
LISTING = "alpha.txt\nbeta.txt"


def run(c: Convo, command: str, output: str, exit_code: int = 0) -> Convo:
    """A terminal call, its thought, and its output as the SDK renders it."""
    return c.call(
        "terminal",
        {"command": command},
        f"{output}\n[Command finished with exit code {exit_code}]",
        f"Let me run {command}.",
    )


CASES: list[Case] = []


def case(
    name: str,
    convo: Convo,
    stuck: bool,
    since: int = 2,
    differs: str = "",
    policy: dict | None = None,
    by: tuple[str, ...] = (),
) -> None:
    CASES.append(Case(name, convo.copy(), stuck, since, differs, policy, by))


# test_history_too_short: a user message and one command.
c = run(Convo("Hi", TOOLS), "ls", LISTING)
case("test_history_too_short", c, False)

# test_is_stuck_uses_only_recent_event_window: fifty old user messages, the last user message,
# three short agent replies, then four identical `ls` with the same output. (What they also
# assert, that only the last 20 events are read, is their plumbing.)
c = Convo("old message 0", TOOLS)
for i in range(1, 50):
    c.user(f"old message {i}")
c.user("begin")
start = c.mark
for _ in range(3):
    c.say("okay")
for _ in range(4):
    run(c, "ls", LISTING)
case("test_is_stuck_uses_only_recent_event_window", c, True, since=start, by=("monologue", "repeat_call"))

# test_is_stuck_without_recent_user_message_still_detects_loop: twelve short agent replies, then
# the four identical `ls` (the task is the only user message, far back).
c = Convo("List the files.", TOOLS)
for _ in range(12):
    c.say("okay")
for _ in range(4):
    run(c, "ls", LISTING)
case("test_is_stuck_without_recent_user_message_still_detects_loop", c, True, by=("monologue", "repeat_call"))

# test_is_stuck_with_fewer_than_20_events_still_detects_loop: only the four identical `ls`.
c = Convo("List the files.", TOOLS)
for _ in range(4):
    run(c, "ls", LISTING)
case("test_is_stuck_with_fewer_than_20_events_still_detects_loop", c, True, by=("repeat_call",))

# test_repeating_action_observation_not_stuck_less_than_4_repeats / _stuck: three, then four.
c = Convo("Run ls, please.", TOOLS)
for _ in range(3):
    run(c, "ls", LISTING)
case(
    "test_repeating_action_observation_not_stuck_less_than_4_repeats",
    c,
    False,
    differs="their threshold is 4 identical pairs, ours (repeat_call) is 3",
)
run(c, "ls", LISTING)
case("test_repeating_action_observation_stuck", c, True, by=("repeat_call",))


# test_repeating_action_error_nudges_before_stuck: the same failing command, the same error.
def failing(c: Convo, times: int) -> Convo:
    for _ in range(times):
        c.call("terminal", {"command": "frobnicate"}, "Command 'frobnicate' not found", "Let me run frobnicate.")
    return c


c = failing(Convo("Run the frobnicate command.", TOOLS), 2)
case("test_repeating_action_error_nudges_before_stuck:2-not-stuck", c, False)
failing(c, 1)
case(
    "test_repeating_action_error_nudges_before_stuck:3-not-stuck",
    c,
    False,
    differs="our trip at 3 is their nudge at 3 (next case): they call a loop stuck one error later, at 4",
)
case("test_repeating_action_error_nudges_before_stuck:3-nudged", c, True, by=("repeat_call",))
failing(c, 1)
case("test_repeating_action_error_nudges_before_stuck:4-stuck", c, True, by=("repeat_call",))

# test_agent_monologue_stuck: three agent messages in a row after the user's (their words differ
# only in a number).
c = Convo("Hi", TOOLS)
for i in range(3):
    c.say(f"Still thinking... {i}")
case("test_agent_monologue_stuck", c, True, by=("monologue",))

# test_not_stuck_with_different_actions: four different commands.
c = Convo("Run a few different commands.", TOOLS)
for command in ("ls", "pwd", "whoami", "date"):
    run(c, command, f"what {command} printed")
case("test_not_stuck_with_different_actions", c, False)

# test_reset_after_user_message: four identical `ls` (stuck); a new user message (not stuck);
# one other command after it (not stuck).
c = Convo("Run ls, please.", TOOLS)
for _ in range(4):
    run(c, "ls", LISTING)
case("test_reset_after_user_message:4-same", c, True, by=("repeat_call",))
c.user("Try another way.")
after_user = c.mark
case("test_reset_after_user_message:user-message", c, False, since=after_user)
run(c, "pwd", "/home/me")
case("test_reset_after_user_message:1-after", c, False, since=after_user)

# test_stuck_detector_config.py::test_custom_action_observation_threshold: the threshold raised
# to 6; four pairs are not stuck, six are. Ours raised the same way ([patterns.repeat_call]
# after = 6, its hand-back moved past it).
SIX = {"patterns": {"repeat_call": {"after": 6, "escalate": [{"at": 8, "action": "halt"}]}}}
c = Convo("Start.", TOOLS)
for _ in range(4):
    run(c, "ls", "alpha.txt")
case("test_custom_action_observation_threshold:4-of-6", c, False, policy=SIX)
for _ in range(2):
    run(c, "ls", "alpha.txt")
case("test_custom_action_observation_threshold:6-of-6", c, True, policy=SIX, by=("repeat_call",))

# test_stuck_detector_nudge.py: a tool that always fails the same way, through a real run.
ALWAYS = [function("file_tool", command="string")]
REFUSED = "Error executing tool 'file_tool': `file_text` must be given to create a file."
NUDGE = (
    "You have made the same file_tool call 3 times and got the same error each time: " + REFUSED + " "
    "Sending it again will not help: fix its arguments or take another approach."
)
EMPTY_NUDGE = "Your last reply had no function call in it. Call a tool, or finish."


def always_failing(times: int) -> Convo:
    c = Convo("Create /tmp/hello.py", ALWAYS)
    for _ in range(times):
        c.call("file_tool", {"command": "create"}, REFUSED)
    return c


# test_run_nudges_before_going_stuck_on_repeating_action_error: nudged after the 3rd failure,
# stuck after the 4th (which follows their nudge).
c = always_failing(3)
case("test_run_nudges_before_going_stuck_on_repeating_action_error:3-nudged", c, True, by=("repeat_call",))
c.user(NUDGE)
c.call("file_tool", {"command": "create"}, REFUSED)
case("test_run_nudges_before_going_stuck_on_repeating_action_error:4-stuck", c, True, by=("repeat_call",))

# test_run_recovers_after_nudge_when_model_self_corrects: after the nudge the model stops with a
# plain reply: the run finishes, never stuck.
c = always_failing(3).user(NUDGE)
nudged = c.mark
c.say("I see what is wrong; stopping here.")
case("test_run_recovers_after_nudge_when_model_self_corrects:after-nudge", c, False, since=nudged)

# test_run_does_not_renudge_action_error_while_streak_is_frozen: after the nudge an empty reply
# (answered by their own "no function call" nudge), then a plain reply: no second action-error
# nudge, not stuck.
c = always_failing(3).user(NUDGE)
nudged = c.mark
c.say("").user(EMPTY_NUDGE).say("I see what is wrong; stopping here.")
case("test_run_does_not_renudge_action_error_while_streak_is_frozen:after-nudge", c, False, since=nudged)


@pytest.mark.parametrize("case", [k.param() for k in CASES])
def test_openhands_sdk_case(case: Case) -> None:
    check(case)
