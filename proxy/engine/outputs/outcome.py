"""Outcomes: how one call's result came out, judged by what kind of call made it.

`fail`, `pass`, `neutral` or `environment`, from an error flag, an `{"error": ...}` payload,
an exit code in one of the shapes agents print, a test-runner or compiler summary, a
traceback, or the tool turning the call down. A call the tool *rejected* (a missing or
invalid argument, an unknown tool) failed before it ran: it says nothing about the work, so
the failure model leaves it to the patterns that watch calls. A check that could not run at
all (its program not found, exit 126 or 127; the test runner itself, or a top-level module
the code imports, not installed) is an *environment* problem: reported as such, never a
failure of the work. Lines every run prints whatever it does (interpreter and library
warnings, "Exception ignored" at exit) are noise: a run that exits 0 and prints only those
has not failed.
"""

from __future__ import annotations

import re
from enum import StrEnum

import orjson

from proxy.engine.outputs.envelope import payload
from proxy.engine.outputs.noise import without_noise
from proxy.engine.outputs.textscan import Marker, any_marker
from proxy.settings.kinds import LOOKS, CallKind

__all__ = [
    "FAIL_MARKERS",
    "PASS_MARKERS",
    "Outcome",
    "environment_problem",
    "exit_code",
    "rejected",
    "result_outcome",
    "test_report",
]


class Outcome(StrEnum):
    FAIL = "fail"
    PASS = "pass"
    NEUTRAL = "neutral"
    ENVIRONMENT = "environment"
    """The call could not run (a missing program or module): a problem of the machine, not the work."""


_EXIT_CODE = re.compile(
    r"(?:exit(?:ed)?[ _](?:code|status)|exit_code|return ?code|returncode|exited with code|"
    r"process exited with code)\s*+(?:[:=>]\s*+)?\[?(-?\d+)",
    re.IGNORECASE,
)
"""An exit code as agents state it; each run of whitespace taken whole (see `textscan`)."""
_RULE = r"^(?>.*?= )"
"""The head of pytest's `==== ... ====` markers: a line's first `= `, each part after it sought once (`textscan`)."""
FAIL_MARKERS = (
    Marker.of("failed", rf"{_RULE}(?>.*?\b\d+ failed\b).*="),  # pytest summary
    Marker.of("error", rf"{_RULE}(?>.*?\b\d+ errors?\b).*="),
    Marker.of("FAILED ", r"^FAILED \S+"),  # pytest short summary, unittest
    Marker.of("failed", r"^(?:Tests|Test Suites):\s+\d+ failed"),  # jest
    Marker.of("failed", r"^[^\S\n]*+Tests\s+\d+ failed"),  # vitest
    Marker.of("test result: FAILED"),  # cargo
    Marker.of("--- FAIL: "),  # go test
    Marker.of("FAIL", r"^FAIL\s"),
    Marker.of("error TS", r"\berror TS\d+:"),  # tsc
    Marker.of("error", r"^error(?:\[E\d+\])?: "),  # rustc / cargo
    Marker.of("Found ", r"^Found \d+ errors?\b"),  # mypy, ruff
    Marker.of(": error: ", r"^\S+:\d+: error: "),  # mypy lines
    Marker.of(": ", r"^\S+:\d+:\d+: [A-Z]+\d+ "),  # flake8 / ruff concise
    Marker.of("npm ERR! "),
    Marker.of("Traceback (most recent call last):"),
    Marker.of("panicked at "),
)
"""Output that says a check failed."""
PASS_MARKERS = (
    Marker.of("passed", r"= \d+ passed[^=\n]*="),  # pytest
    Marker.of("skipped", r"= \d+ skipped[^=\n]*="),
    Marker.of("no tests ran", r"= no tests ran[^=\n]*="),
    Marker.of("passed", r"^(?:Tests|Test Suites):\s+\d+ passed, \d+ total"),  # jest
    Marker.of("passed", r"^[^\S\n]*+Tests\s+\d+ passed"),  # vitest
    Marker.of("test result: ok."),  # cargo
    Marker.of("ok\t", r"^ok\t\S+"),  # go test
    Marker.of("ok ", r"^ok\s+\S+"),
    Marker.of("PASS\n", r"^PASS$"),
    Marker.of("OK", r"^OK(?: \(|$)"),  # unittest
    Marker.of("Success: no issues found"),  # mypy
    Marker.of("All checks passed!"),  # ruff
)
"""Output that says a check passed."""
_REJECTED = re.compile(
    r"<tool_use_error>|"
    r"\b(?:missing|invalid)\s+(?:required\s+)?(?:argument|parameter|param|field|input)s?\b|"
    r"\b(?:argument|parameter|field|property)\s+[`'\"]?[\w.-]+[`'\"]?\s+is\s+(?:required|missing|invalid)\b|"
    r"\bis a required (?:argument|parameter|property)\b|"
    r"\bvalidation errors? for\b|"
    r"\b(?:unknown|unsupported) (?:tool|function)\b|\bno such tool\b|"
    r"\btool\s+[`'\"]?[\w.-]+[`'\"]?\s+(?:not found|does not exist|is not available)\b|"
    r"\bunexpected keyword argument\b|\bmissing \d+ required (?:positional|keyword)",
    re.IGNORECASE,
)
"""What a tool says when it turns a call down before running it."""
_ERROR_HEAD = re.compile(
    r"^\s*+(?:<tool_use_error>|\**(?:err|error|invalid|missing|unknown|tool|failed|failure|\w*(?:error|exception))\b|"
    r"\d+ validation errors?\b)",
    re.IGNORECASE,
)
"""A result that opens as an error does (not file contents that happen to mention one)."""
_READ_FAILURE = re.compile(
    r"^[^\n]*(?:\bno such file or directory\b|\bdoes not exist\b|\bis a directory\b|\bpermission denied\b)|"
    r"^File [^\n]* not found(?:\n|$)|"  # SWE-agent's `open`, its footer after it
    r"^\s*usage:[^\n]*\n\s*error\b|"  # its `search_file "x" Name.java`, a bare name (tune, jackson-databind-4641)
    r"^\s*error\b",
    re.IGNORECASE,
)
"""A read or search that found nothing to read: its first line says so."""
_EDIT_FAILURE = re.compile(
    r"^\s*+(?:error|failed|failure|no replacement was performed|<tool_use_error>|no file open)|"
    r"\b(?:did not appear verbatim|not found in|no match(?:es)? found|could not find|does not match anything)\b|"
    r"your proposed edit has introduced new syntax error|your changes have not been applied",
    re.IGNORECASE,
)


def _json_error(text: str) -> bool:
    stripped = text.lstrip()
    if not stripped.startswith("{"):
        return False
    try:
        payload = orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return False
    return isinstance(payload, dict) and bool(payload.get("error"))


def exit_code(text: str) -> int | None:
    """The last exit code the output states, if any."""
    # Agents print the code first (`<returncode>1</returncode>`) or last (`exit code: 1`).
    region = (text if len(text) <= 2000 else text[:400] + "\n" + text[-1600:]).lower()
    last: tuple[int, int] | None = None
    for needle in ("exit", "return", "process"):
        position = region.find(needle)
        while position != -1:
            match = _EXIT_CODE.match(region, position)
            if match and (last is None or position > last[0]):
                last = (position, int(match.group(1)))
            position = region.find(needle, position + 1)
    return None if last is None else last[1]


_REPORTS = (
    Marker.of("passed", rf"{_RULE}(?>.*?\b\d+ (?:passed|failed)\b).*="),  # pytest
    Marker.of("failed", rf"{_RULE}(?>.*?\b\d+ failed\b).*="),
    Marker.of("error", rf"{_RULE}(?>.*?\b\d+ errors?\b).*="),
    Marker.of("no tests ran", r"= no tests ran"),
    Marker.of("Ran ", r"^Ran \d+ tests? in "),  # unittest, Django's runner
    Marker.of("Tests", r"^(?:Tests|Test Suites):\s+\d+"),  # jest
    Marker.of("Tests", r"^[^\S\n]*+Tests\s+\d+ (?:passed|failed)"),  # vitest
    Marker.of("test result: "),  # cargo
    Marker.of("--- FAIL: "),  # go test
    Marker.of("ok\t", r"^ok\t\S+"),
    Marker.of("passed", r"^[^\S\n]*+\d+ (?:passed|failed)"),
    Marker.of(" failed", r"^[^\S\n]*+\d+ failed(?:,| in )"),  # pytest -q, none passed: `1 failed, 4 warnings in 0.2s`
    Marker.of("tests passed"),
    Marker.of("tests failed"),
)
"""A test runner's report: the output of a check, whatever program printed it."""


def test_report(text: str) -> bool:
    """The output holds a test runner's report (pytest's, unittest's `Ran N tests`, jest's...)."""
    return any_marker(_REPORTS, text)


_NOT_RUN = (
    Marker.of(": command not found"),
    Marker.of(": not found", r": not found$"),
    Marker.of("can't open file", r"^(?>.*?can't open file ).*No such file or directory"),
    Marker.of("No module named", r"No module named (?:pytest|unittest|nose|tox|nox|coverage)\b"),
    Marker.of("/usr/bin/env: ", r"^/usr/bin/env: .*No such file or directory"),
    Marker.of("sh: ", r"^(?:/bin/|/usr/bin/)?(?:ba|z|da)?sh: (?:line \d+: )?[^:\n]+: No such file or directory$"),
    Marker.of(
        "FileNotFoundError", r"^FileNotFoundError: \[Errno 2\] No such file or directory: '[\w.+-]+'(?:: '[\w.+-]+')?$"
    ),
    Marker.of("ERROR: not found: ", r"^ERROR: not found: "),  # pytest given a test id that is not there
    Marker.of("ERROR: file or directory not found: ", r"^ERROR: file or directory not found: "),
    Marker.of("Connection refused"),
    Marker.of("Is the server running on that host"),
    Marker.of("could not translate host name"),
    Marker.of("Temporary failure in name resolution"),
    Marker.of("Name or service not known"),
    Marker.of("Network is unreachable"),
    Marker.of("but settings are not configured. You must either define the environment variable"),
)
"""A line saying the call could not run (markers: a substring first, the line's pattern only where it is)."""
_MISSING_MODULE = re.compile(r"^(?:ModuleNotFoundError|ImportError): No module named '?([\w]+)'?\s*$", re.MULTILINE)
_BROKE = (
    Marker.of("unexpected EOF while looking for matching"),
    Marker.of("syntax error: unexpected end of file"),
    Marker.of("syntax error near unexpected token"),
    Marker.of("cd: ", r"^(?>.*?cd: ).*: No such file or directory"),
    Marker.of("EXECUTION TIMED OUT", r"^EXECUTION TIMED OUT\b"),
)
"""The shell could not parse the command (prose sent as a command: an unmatched quote) or `cd`
into its directory, or the agent's harness stopped it for taking too long: the call failed,
whatever kind it was read as and whatever it printed."""
_EDITOR_REFUSED = re.compile(
    r"your proposed edit has introduced new syntax error|your changes have not been applied", re.IGNORECASE
)
"""SWE-agent's editor turning an edit down, after the code it would have changed: the call was
not carried out (whatever kind it was read as: an edit whose body runs code is read as a check)."""
_USAGE = re.compile(r"\A\s*usage:\s+\S", re.IGNORECASE)
_USAGE_LINES = 6
"""At most this many lines, the first a usage line: a synopsis, not a program's output."""


def _usage_only(text: str) -> bool:
    """The program or tool answered with its usage alone: the call was not taken as written (SWE-agent's
    `Usage: edit <start_line>:<end_line>` to `edit <path> 6:6`). Not asked of reads: a file may open so."""
    body = payload(text).strip()
    return _USAGE.match(body) is not None and body.count("\n") < _USAGE_LINES


_FRAME = re.compile(r'^[^\S\n]*+File "([^"]+)", line \d+', re.MULTILINE)
_ERROR_LINE = re.compile(r"^\w*(?:Error|Exception)\b[^\n]*$", re.MULTILINE)


def environment_problem(text: str, code: int | None) -> bool:
    """The call could not run: its program or the test runner not found, the interpreter unable
    to open its script, a program the code starts not installed (`FileNotFoundError` naming a
    bare program), a server or host it needs not there (connection refused, no such host), the
    only error a top-level module that is not installed, an installed package that cannot
    import under this interpreter, or Django started with no settings (a harness that never
    reached the code it checks)."""
    if code in (126, 127):
        return True
    head = text[:2000]
    if any_marker(_NOT_RUN, head) or (text is not head and any_marker(_NOT_RUN, text[-2000:])):
        return True
    tail = text[-4000:]
    missing = _MISSING_MODULE.findall(tail) if "No module named" in tail else []
    errors = _ERROR_LINE.findall(tail) if "Error" in tail or "Exception" in tail else []
    return (bool(missing) and len(errors) == len(missing)) or _installed_cannot_import(tail, errors)


def _installed_cannot_import(tail: str, errors: list[str]) -> bool:
    """The run ends in an import error raised inside an installed package (its last frame under
    site-packages): the package does not work with this interpreter, whatever the work did
    (`from inspect import formatargspec` in an old `wrapt` on Python 3.11)."""
    if not errors or not errors[-1].startswith(("ImportError", "ModuleNotFoundError")):
        return False
    frames = _FRAME.findall(tail)
    return bool(frames) and any(part in frames[-1] for part in ("/site-packages/", "/dist-packages/"))


def rejected(text: str) -> bool:
    """The tool turned the call down (a missing or invalid argument, an unknown tool): the result
    opens as an error and says why (past the agent's framing); or SWE-agent's editor refused the edit."""
    text = payload(text)
    head = _ERROR_HEAD.match(text) is not None and _REJECTED.search(text[:400]) is not None
    return head or ("our" in text and _EDITOR_REFUSED.search(text) is not None)


def result_outcome(kind: CallKind, text: str, is_error: bool) -> Outcome:
    """How one call's result came out, judged by what kind of call made it. What the result opens
    with is read past the agent's framing (SWE-agent's `OBSERVATION:` line, `envelope.payload`)."""
    said = payload(text)
    if is_error or _json_error(said) or rejected(said) or (kind not in LOOKS and _usage_only(text)):
        return Outcome.FAIL
    text = text if text.endswith("\n") else text + "\n"
    code = exit_code(text)
    if kind in (CallKind.VERIFY, CallKind.OTHER) and code != 0 and environment_problem(payload(text), code):
        return Outcome.ENVIRONMENT
    if kind is not CallKind.FINISH and code != 0 and any_marker(_BROKE, text[:600]):
        return Outcome.FAIL
    if kind is CallKind.EDIT:
        if code not in (None, 0) or _EDIT_FAILURE.search(said[:400]):
            return Outcome.FAIL
        return Outcome.NEUTRAL
    if kind is CallKind.FINISH:
        return Outcome.NEUTRAL
    if kind in (CallKind.READ, CallKind.SEARCH, CallKind.POLL):
        # grep's exit 1 means "no match"; a read's content is not evidence of failure.
        missing = kind is not CallKind.POLL and _READ_FAILURE.search(said[:300]) is not None
        return Outcome.FAIL if code not in (None, 0, 1) or missing else Outcome.NEUTRAL
    if code not in (None, 0):
        return Outcome.FAIL
    if any_marker(PASS_MARKERS, text) and not _counts_failure(text):
        return Outcome.PASS if kind is CallKind.VERIFY else Outcome.NEUTRAL
    if any_marker(FAIL_MARKERS, text) and not (code == 0 and not any_marker(FAIL_MARKERS, without_noise(text))):
        return Outcome.FAIL
    if code == 0 and kind is CallKind.VERIFY:
        return Outcome.PASS
    return Outcome.NEUTRAL


_FAILED_COUNT = re.compile(r"\b[1-9]\d* (?:failed|errors?)\b|test result: FAILED|^--- FAIL", re.MULTILINE)


def _counts_failure(text: str) -> bool:
    return _FAILED_COUNT.search(text) is not None
