"""gemini-cli's loop detection (`packages/core/src/services/loopDetectionService.ts`), its cases
as transcripts.

Each case is one verdict of `loopDetectionService.test.ts` on the stream events their test feeds,
rewritten as the chat transcript that stream makes: a tool-call request is an assistant message
with that call (and the call's result: their detector never reads results, so a call returns the
same thing each time it is made, and different calls different things); content chunks are the
text of one assistant reply (their content check runs within one response's stream, and a tool
call resets it); a thought is text beside the next call. Each of their tests starts a fresh
service, so a case's verdict is about the whole transcript. The texts are ours; the tool
names and the call sequences are theirs.

Their thresholds: 5 identical calls in a row, or a cycle of 2 to 5 calls repeated 5 times; a
50-character chunk seen 10 times close together, outside code blocks, tracking reset by
markdown structure (tables, lists, headings, quotes, fences). The LLM-judged check is skipped.
"""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest
from peer_kit import Case, Convo, check, function

TOOLS = [
    function("read_file", file_path="string"),
    function("testTool", param="string"),
    function("anotherTool", param="string"),
    function("t", id="integer"),
]
TASK = "Help me with this repository."
CHUNK = 50
CONTENT_TIMES = 10

CASES: list[Case] = []


def case(name: str, convo: Convo, stuck: bool, differs: str = "", by: tuple[str, ...] = ()) -> None:
    CASES.append(Case(name, convo.copy(), stuck, 0, differs, None, by))


def result(name: str, args: dict[str, Any]) -> str:
    """What a call returns: the same every time it is made."""
    if name == "read_file":
        return f"This is the text of {args['file_path']}.\nIt has two lines.\n"
    return f"{name} finished: {orjson.dumps(args).decode()}"


def calls(sequence: list[tuple[str, dict[str, Any]]], thought_before_last: str = "") -> Convo:
    c = Convo(TASK, TOOLS)
    for i, (name, args) in enumerate(sequence):
        text = thought_before_last if thought_before_last and i == len(sequence) - 1 else None
        c.call(name, args, result(name, args), text)
    return c


SAME = ("testTool", {"param": "value"})
A = ("read_file", {"file_path": "first.txt"})
B = ("read_file", {"file_path": "second.txt"})
C = ("read_file", {"file_path": "third.txt"})

# --- Tool Call Loop Detection ---
case(
    "should not detect a loop for fewer than TOOL_CALL_LOOP_THRESHOLD identical calls",
    calls([SAME] * 4),
    False,
    differs="their threshold is 5 identical calls, ours (repeat_call) is 3",
)
case(
    "should detect a loop on the TOOL_CALL_LOOP_THRESHOLD-th identical call",
    calls([SAME] * 5),
    True,
    by=("repeat_call",),
)
case("should detect a loop on subsequent identical calls", calls([SAME] * 6), True, by=("repeat_call",))
three = [("testTool", {"param": "value1"}), ("testTool", {"param": "value2"}), ("anotherTool", {"param": "value1"})]
case(
    "should not detect a loop for different tool calls",
    calls(three * 3),
    False,
    differs="three calls made three times round, each result as before, are a cycle to us (ping_pong counts "
    "cycles of two to four calls, three times round); their cycle check needs a longer stretch",
)
case(
    "should not reset tool call counter for other event types",
    calls([SAME] * 5, thought_before_last="Let me think about what to do next."),
    True,
    by=("repeat_call",),
)
case(
    "should detect an alternating tool call loop (cycle of length 2)",
    calls([A, B] * 7 + [A]),
    True,
    by=("ping_pong", "retread"),  # read_stagnation leaves a loop of one or two reads to repeat_call and ping_pong
)
case(
    "should detect a cyclic tool call loop of length 3",
    calls(([A, B, C] * 7)[:20]),
    True,
    by=("ping_pong", "retread"),  # an exact round is also a stretch of old calls: retread names it later
)
case(
    "should detect a cyclic tool call loop of length 5",
    calls([("t", {"id": k % 5 + 1}) for k in range(30)]),
    True,
    # `id` is a volatile key to us (dropped before calls are compared): one action, five results going
    # round, each pair made before; not an exact round of distinct calls (ping_pong's), a stretch of old
    # calls (retread's)
    by=("retread",),
)
case(
    "should not detect loops for non-looping alternating sequences that vary",
    calls([A, B, A, B, C, A, B, A, B]),
    False,
)


# --- Content Loop Detection ---
def repetitive(ident: int, length: int) -> str:
    """A sentence of its own said over and over, cut to `length` characters."""
    sentence = f"Here is one sentence, with the tag {ident}. "
    return (sentence * (length // len(sentence) + 1))[:length]


def noise(length: int, rng: random.Random) -> str:
    return "".join(rng.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", k=length))


def reply(*chunks: str) -> Convo:
    """One assistant reply streamed as these chunks."""
    return Convo(TASK, TOOLS).say("".join(chunks))


CHANTING = (
    "a reply that repeats itself within its own stream is no pattern of ours: we read turns, and monologue "
    "counts whole replies repeated (3 in a row), not chunks within one"
)
LOOPED = repetitive(1, CHUNK)
rng = random.Random(7)

case("should not detect a loop for random content", reply(*(noise(10, rng) for _ in range(1000))), False)
case(
    "should detect a loop when a chunk of content repeats consecutively",
    reply(*[LOOPED] * CONTENT_TIMES),
    True,
    differs=CHANTING,
)
prefix = "projects/demo-project-4242/locations/europe-west4/services/"
case(
    "should not detect a loop for a list with a long shared prefix",
    reply("".join(f"- {prefix}{i}\n" for i in range(15))),
    False,
)
case(
    "should not detect a loop if repetitions are very far apart",
    reply(*[chunk for _ in range(CONTENT_TIMES) for chunk in (LOOPED, noise(500, rng))]),
    False,
)
case(
    "should detect a loop with longer repeating patterns (e.g. ~150 chars)",
    reply(*[repetitive(1, 150)] * (CONTENT_TIMES + 2)),
    True,
    differs=CHANTING,
)
case(
    "should detect the specific user-provided loop example",
    reply(
        *["I am not going to write anything.\n  I will just stop here.\n  That is all.\n  Nothing more from me.\n"]
        * (CONTENT_TIMES + 5)
    ),
    True,
    differs=CHANTING,
)
case(
    "should detect the second specific user-provided loop example",
    reply(*["Every change is made and the tests are checked. I will now call the task finished.\n  "] * 15),
    True,
    differs=CHANTING,
)
case(
    "should detect a loop of alternating short phrases",
    reply(*["Working... Ready. "] * (CONTENT_TIMES * 3)),
    True,
    differs=CHANTING,
)
case(
    "should detect a loop of repeated complex thought processes",
    reply(*["I should open the file. The file is missing. I shall write the file. "] * (CONTENT_TIMES + 5)),
    True,
    differs=CHANTING,
)

# --- Content Loop Detection with Code Blocks ---
case(
    "should not detect a loop when repetitive content is inside a code block",
    reply("```\n", *[LOOPED] * CONTENT_TIMES, "\n```"),
    False,
)
case(
    "should not detect loops when content transitions into a code block",
    reply(*[LOOPED] * (CONTENT_TIMES - 2), "```javascript\n", *[LOOPED] * CONTENT_TIMES),
    False,
)
case(
    "should skip loop detection when already inside a code block (this.inCodeBlock)",
    reply("Here is the code:\n```\n", *[LOOPED] * (CONTENT_TIMES + 5)),
    False,
)
case(
    "should correctly track inCodeBlock state with multiple fence transitions",
    reply("Plain words ", "```\n", *[LOOPED] * 5, "```\n", "```python\n"),
    False,
)
case(
    "should detect a loop when repetitive content is outside a code block",
    reply("```", "\nsome code\n", "```", *[LOOPED] * CONTENT_TIMES),
    True,
    differs=CHANTING,
)
case(
    "should handle content with multiple code blocks and no loops",
    reply("```\nfirst()\n```", "\nsome words\n", "```\nsecond()\n```"),
    False,
)
case(
    "should handle content with mixed code blocks and looping text",
    reply("```", "\nfirst()\n", "```", *[LOOPED] * CONTENT_TIMES),
    True,
    differs=CHANTING,
)
case(
    "should not detect a loop for a long code block with some repeating tokens",
    reply("```\n", *["while (n > 0) { n -= 1; console.log(n); }"] * 20, "\n```"),
    False,
)
case(
    "should reset tracking when a code fence is found",
    reply(*[LOOPED] * (CONTENT_TIMES - 1), "```", *[LOOPED] * CONTENT_TIMES),
    False,
)
for name, marker in (
    ("should reset tracking when a table is detected", "| Name | Value |"),
    ("should reset tracking when a list item is detected", "* An item"),
    ("should reset tracking when a heading is detected", "## A heading"),
    ("should reset tracking when a blockquote is detected", "> Quoted words"),
):
    case(name, reply(*[LOOPED] * (CONTENT_TIMES - 1), marker, *[LOOPED] * (CONTENT_TIMES - 1)), False)

FORMATS = {
    "should reset tracking for various list item formats": (
        ["* Star item", "- Dash item", "+ Plus item", "1. First item", "42. Later item"],
        100,
    ),
    "should reset tracking for various table formats": (["| Left | Right |", "|---|---|", "|++|++|", "+---+---+"], 200),
    "should reset tracking for various heading levels": ([f"{'#' * n} Level {n}" for n in range(1, 7)], 300),
}
for name, (markers, base) in FORMATS.items():
    for index, marker in enumerate(markers):
        after = repetitive(base + index, CHUNK)
        case(
            f"{name}[{marker}]",
            reply(*[LOOPED] * (CONTENT_TIMES - 1), "\n" + marker, *[after] * (CONTENT_TIMES - 1)),
            False,
        )

# --- Edge Cases, Divider Content Detection ---
case("should handle empty content", reply(""), False)
case("should not detect a loop for repeating divider-like content", reply(*["-" * CHUNK] * (CONTENT_TIMES + 5)), False)
case(
    "should not detect a loop for repeating complex box-drawing dividers",
    reply(*["╭─" * (CHUNK // 2)] * (CONTENT_TIMES + 5)),
    False,
)

# --- Reset Functionality ---
c = Convo(TASK, TOOLS)
c.call("testTool", {"param": "value"}, result("testTool", {"param": "value"}), text="Some words. " * 9)
c.say("New words.")
case("tool call should reset content count", c, False)


@pytest.mark.parametrize("case", [k.param() for k in CASES])
def test_gemini_cli_case(case: Case) -> None:
    check(case)
