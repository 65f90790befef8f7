"""Classification by the default policy: what each call does, and how its result came out."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy.engine.outputs.outcome import Outcome, rejected, result_outcome
from proxy.engine.reading.classify import Classifier
from proxy.engine.reading.commands import read_command
from proxy.settings.kinds import CallKind
from proxy.settings.policy import default_policy

OUTPUTS = Path(__file__).resolve().parents[1] / "scenarios" / "outputs"
CLASSIFIER = Classifier(default_policy().classify)


@pytest.mark.parametrize(
    ("command", "kind", "mutates"),
    [
        ("python -m pytest tests/test_parse.py -x", CallKind.VERIFY, False),
        ("cd /workspace && pytest -q", CallKind.VERIFY, False),
        ("npm test -- --watch=false", CallKind.VERIFY, False),
        ("cargo test --lib", CallKind.VERIFY, False),
        ("go test ./...", CallKind.VERIFY, False),
        ("make test", CallKind.VERIFY, False),
        ("npx tsc --noEmit", CallKind.VERIFY, False),
        ("mypy src", CallKind.VERIFY, False),
        ("sed -i 's/a/b/' src/parse.py", CallKind.EDIT, True),
        ("sed -i 's/a/b/' src/parse.py && python -m pytest", CallKind.VERIFY, True),
        ("cat > src/parse.py <<'EOF'\nx = 1\nEOF", CallKind.EDIT, True),
        ("echo 'x = 1' >> src/parse.py", CallKind.EDIT, True),
        ("git apply fix.patch", CallKind.EDIT, True),
        ("cat src/parse.py", CallKind.READ, False),
        ("sed -n '1,80p' src/parse.py", CallKind.READ, False),
        ("diff -u src/parse.py src/parse.py.orig", CallKind.READ, False),  # exit 1: they differ, not a failure
        ("cmp out.txt expected.txt", CallKind.READ, False),
        ("ls -la", CallKind.READ, False),
        ("grep -rn 'def parse' src", CallKind.SEARCH, False),
        ("rg parse", CallKind.SEARCH, False),
        ("find . -name '*.py' | head", CallKind.SEARCH, False),
        ("python -m pytest 2>&1 | tail -20", CallKind.VERIFY, False),
        ("ls > /dev/null 2>&1", CallKind.READ, False),
        ("sleep 5", CallKind.POLL, False),
        ("pip install -e .", CallKind.OTHER, False),
        # a program file run is a check, whatever its name (a repro script, Django's runner)
        ("python repro.py", CallKind.VERIFY, False),
        ("python3 tests/runtests.py admin_views -v 2", CallKind.VERIFY, False),
        ("./tests/runtests.py queries", CallKind.VERIFY, False),
        ("bin/test -v", CallKind.VERIFY, False),
        # searching for a runner's name runs no test
        ("grep -rn pytest setup.cfg | head", CallKind.SEARCH, False),
        # a here-document's body is data: its `>` and its lines are no commands
        ("cat > test_fix.py << 'EOF'\nif a > b:\n    rm = 1\nEOF\npython test_fix.py", CallKind.VERIFY, True),
        # a quoted `>` is an argument, never a redirect (corpus, mswea2 pvlib-1707: a search for
        # `">= 90"` was read as writing pvlib/iam.py whole, an edit, and a re-run was owed)
        ('cd /testbed && grep -n ">= 90" pvlib/iam.py', CallKind.SEARCH, False),
        ("grep -rn '-> None' src | head", CallKind.SEARCH, False),
        ('echo ">" notes.txt', CallKind.OTHER, False),
        # inline code is a probe: its `>` is no redirect, and it writes nothing
        ("python - <<'PY'\nprint(1 > 0)\nPY", CallKind.OTHER, False),
        ('python -c "import x; print(x.a > 2)"', CallKind.OTHER, False),
        # perl's program given after bundled flags (`-pe`, `-ne`): inline code, not a program file
        # (corpus, mswea1 sphinx-10435: a failed `perl -0777 -pe '...' -i latex.py` was read as
        # the failing check, and the agent told to re-run it)
        ("perl -0777 -pe 's/a/b/s' -i src/parse.py", CallKind.EDIT, True),
        ("perl -i -pe 's/a/b/' src/parse.py && nl -ba src/parse.py | head", CallKind.EDIT, True),
        ("perl -ne 'print if /def/' src/parse.py", CallKind.OTHER, False),
        ("perl scripts/check.pl", CallKind.VERIFY, False),
        # removing, creating folders, changing modes change no code
        ("rm reproduce_issue.py", CallKind.OTHER, False),
        ("mkdir -p build && touch build/.keep", CallKind.OTHER, False),
        # Django's own runner, as SWE-bench agents call it (corpus: read as other)
        (
            "cd /testbed && python -m django test auth_tests.test_validators --settings=tests.test_sqlite",
            CallKind.VERIFY,
            False,
        ),
        ("python -m django check", CallKind.OTHER, False),
        # installing or finding a runner runs no check (corpus: `pip install pytest -q` was read
        # as a passing check, and cleared the live failure)
        ("pip install pytest -q", CallKind.OTHER, False),
        ("python -m pip install -q pytest pytest-cov", CallKind.OTHER, False),
        ("which pytest", CallKind.OTHER, False),
        ("npm install --save-dev jest", CallKind.OTHER, False),
        ("pip install pytest -q && python -m pytest tests/test_a.py", CallKind.VERIFY, False),
        # mini-swe-agent submits when its output's first line is the submit word: what runs
        # after it (1.x: stage and show the diff; 2.x: show the patch) is the submission
        ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached", CallKind.FINISH, False),
        ("cd /testbed && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt", CallKind.FINISH, False),
        # the submit word printed after a check is no submission: its output comes first
        ("python -m pytest -q && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", CallKind.VERIFY, False),
        ("git diff && echo MINI_SWE_AGENT_FINAL_OUTPUT", CallKind.READ, False),
        # a filter reading a pipe reads no file: the command is what its program does
        ("gradle build 2>&1 | tail -40", CallKind.OTHER, False),
        ("pip install -e . | tail -2", CallKind.OTHER, False),
        ("mvn package | grep -v WARNING | head -20", CallKind.OTHER, False),
        # after a read or a search, a filter is a look too (the strongest kind, as before)
        ("cat src/parse.py | grep -n def", CallKind.SEARCH, False),
        ("ls src | head", CallKind.READ, False),
        # `||` runs the next command instead, on no pipe: its `tail` reads its file
        ("make install || tail -5 build.log", CallKind.READ, False),
        # a segment that writes is no filter (`tee` writes the files it names)
        ("make install | tee build.log", CallKind.EDIT, True),
    ],
)
def test_shell_commands(command: str, kind: CallKind, mutates: bool) -> None:
    """A shell command's kind is its strongest segment's; any writing segment makes it mutating."""
    result = CLASSIFIER.classify("bash", {"command": command})
    assert (result.kind, result.mutates) == (kind, mutates)


@pytest.mark.parametrize(
    ("command", "segments"),
    [
        ("python -m pytest -x 2>&1 | tail -30", {CallKind.VERIFY}),
        ("pip install -e . | tail -2", {CallKind.OTHER}),
        ("find . -name '*.py' | head", {CallKind.SEARCH, CallKind.READ}),
        ("pytest -q; tail -20 log.txt", {CallKind.VERIFY, CallKind.READ}),
    ],
)
def test_the_segments_a_command_is_read_by(command: str, segments: set[CallKind]) -> None:
    """What `repeat_call` asks before it refuses a read made again (every segment a look): a filter
    of a program's output is none of its segments, so `pip install -e . | tail -2` is no look."""
    assert CLASSIFIER.classify("bash", {"command": command}).segments == segments


@pytest.mark.parametrize(
    ("name", "arguments", "kind"),
    [
        ("str_replace_editor", {"command": "view", "path": "/w/a.py"}, CallKind.READ),
        (
            "str_replace_editor",
            {"command": "str_replace", "path": "/w/a.py", "old_str": "a", "new_str": "b"},
            CallKind.EDIT,
        ),
        ("str_replace_editor", {"command": "create", "path": "/w/b.py", "file_text": ""}, CallKind.EDIT),
        ("Edit", {"file_path": "/w/a.py", "old_string": "a", "new_string": "b"}, CallKind.EDIT),
        ("Read", {"file_path": "/w/a.py"}, CallKind.READ),
        ("Grep", {"pattern": "parse"}, CallKind.SEARCH),
        ("apply_patch", {"input": "*** Begin Patch"}, CallKind.EDIT),
        ("shell", {"command": ["bash", "-lc", "pytest -q"]}, CallKind.VERIFY),
        ("execute_command", {"command": "npm test"}, CallKind.VERIFY),
        ("my_custom_runner", {"cmd": "cargo test"}, CallKind.VERIFY),
        ("fetch_weather", {"city": "Oslo"}, CallKind.OTHER),
        ("run_unit_tests", {}, CallKind.VERIFY),
        ("BashOutput", {"bash_id": "1"}, CallKind.POLL),
    ],
)
def test_tools_by_name_argument_and_hint(name: str, arguments: dict[str, object], kind: CallKind) -> None:
    """Known tools by name or by one argument; unknown tools by a shell-like argument or a name hint."""
    assert CLASSIFIER.classify(name, arguments).kind is kind


def test_malformed_arguments_never_raise() -> None:
    """A call whose arguments did not parse is still classified, by name."""
    assert CLASSIFIER.classify("bash", None).kind is CallKind.OTHER
    assert CLASSIFIER.classify("Read", None).kind is CallKind.READ


@pytest.mark.parametrize(
    ("name", "kind", "outcome"),
    [
        ("pytest_addition_a", CallKind.VERIFY, Outcome.FAIL),
        ("pytest_pass", CallKind.VERIFY, Outcome.PASS),
        ("jest_a", CallKind.VERIFY, Outcome.FAIL),
        ("cargo_a", CallKind.VERIFY, Outcome.FAIL),
        ("go_a", CallKind.VERIFY, Outcome.FAIL),
        ("tsc_a", CallKind.VERIFY, Outcome.FAIL),
        ("python_traceback_a", CallKind.OTHER, Outcome.FAIL),
        ("pytest_pass", CallKind.OTHER, Outcome.NEUTRAL),
    ],
)
def test_runner_outputs(name: str, kind: CallKind, outcome: Outcome) -> None:
    """Runner summaries, compiler errors and tracebacks decide the outcome; only a verification can pass."""
    assert result_outcome(kind, (OUTPUTS / f"{name}.txt").read_text(), is_error=False) is outcome


@pytest.mark.parametrize(
    ("text", "kind", "is_error", "outcome"),
    [
        ("anything", CallKind.OTHER, True, Outcome.FAIL),
        ('{"error": "permission denied"}', CallKind.OTHER, False, Outcome.FAIL),
        ('{"error": null, "ok": true}', CallKind.OTHER, False, Outcome.NEUTRAL),
        ("<returncode>2</returncode>\n<output>boom</output>", CallKind.OTHER, False, Outcome.FAIL),
        ("Exit code: 0\nall good", CallKind.VERIFY, False, Outcome.PASS),
        ("Process exited with code 1", CallKind.VERIFY, False, Outcome.FAIL),
        ("===== 1 failed, 5 passed in 0.1s =====\nexit code: 0", CallKind.VERIFY, False, Outcome.FAIL),
        (
            "No replacement was performed, old_str `x` did not appear verbatim in /w/a.py.",
            CallKind.EDIT,
            False,
            Outcome.FAIL,
        ),
        ("<tool_use_error>String to replace not found in file.</tool_use_error>", CallKind.EDIT, False, Outcome.FAIL),
        (
            "The file /w/a.py has been edited. Here's the result of running `cat -n`...",
            CallKind.EDIT,
            False,
            Outcome.NEUTRAL,
        ),
        ("src/a.py:3: x = 'Traceback (most recent call last):'", CallKind.SEARCH, False, Outcome.NEUTRAL),
        ("exit code: 1", CallKind.SEARCH, False, Outcome.NEUTRAL),
        ("def f():\n    raise ValueError('no')\n", CallKind.READ, False, Outcome.NEUTRAL),
    ],
)
def test_result_shapes(text: str, kind: CallKind, is_error: bool, outcome: Outcome) -> None:
    """Error flags, JSON errors, exit codes in agents' shapes, failed edits; reads and searches are not evidence."""
    assert result_outcome(kind, text, is_error) is outcome


@pytest.mark.parametrize(
    "output",
    [
        "ERROR:\nMissing required parameter `path` for command: view.",
        "Error: Invalid arguments: 'command' is a required property",
        "1 validation error for ExecuteBashAction\ncommand\n  Field required",
        "<tool_use_error>InputValidationError: file_path is missing</tool_use_error>",
        "Error: Unknown tool: run_tests_fast",
        "TypeError: read_file() got an unexpected keyword argument 'filepath'",
    ],
)
def test_a_call_the_tool_turned_down_is_a_rejected_failure_whatever_its_kind(output: str) -> None:
    """Argument-validation and tool errors are failures (never counted as successes), and
    rejected: they say nothing about the work, so the failure model leaves them alone."""
    for kind in (CallKind.READ, CallKind.EDIT, CallKind.OTHER, CallKind.VERIFY):
        assert result_outcome(kind, output, False) is Outcome.FAIL
    assert rejected(output)


@pytest.mark.parametrize(
    "output",
    [
        "cat: src/missing.py: No such file or directory",
        "ERROR:\nThe path /workspace/src/missing.py does not exist. Please provide a valid path.",
        "Error: /workspace/src is a directory",
        # SWE-agent's `open`, with the footer it prints after every command (corpus, gson-1787:
        # the same failed `open` three times was read as "the same call succeeded 3 times")
        "File gson/src/X.java not found\n(Open file: /ReproduceIssue.java)\n(Current directory: /google__gson)\nbash-$",
        # SWE-agent's `search_file` given a bare name that is not a path (corpus, tune, jackson-
        # databind-4641, DeepSeek-Coder-V2: sent again in each round of a five-call cycle)
        "Usage: search_file <search_term> [<file>]\nError: File name POJOPropertiesCollector.java not found. "
        "Please provide a valid file name.\n(Open file: /r/src/POJOPropertiesCollector.java)\nbash-$",
    ],
)
def test_a_read_of_nothing_fails(output: str) -> None:
    for kind in (CallKind.READ, CallKind.SEARCH):
        assert result_outcome(kind, output, False) is Outcome.FAIL
    assert not rejected(output)


@pytest.mark.parametrize(
    "output",
    [
        "     1\tdef parse(s):\n     2\t    # raises ValueError on a missing argument\n",
        "src/parse.py:2:def parse(s):  # error handling lives here",
        "",
        # a file that opens with a usage line: a read, whatever it says below it
        "Usage: tool [options]\n  -h  print this help\n",
        "Usage: tool [options]\n\nErrors are printed to stderr.\n",
    ],
)
def test_reads_whose_content_mentions_errors_are_not_failures(output: str) -> None:
    for kind in (CallKind.READ, CallKind.SEARCH):
        assert result_outcome(kind, output, False) is Outcome.NEUTRAL
    assert not rejected(output)


def test_the_text_an_editor_command_puts_in_the_file_is_not_read_as_shell() -> None:
    """SWE-agent's `edit N:M` takes the lines after it as code: a `>` there is no redirect."""
    edit = read_command("edit 604:604\n    if (n > MAX_KEY_LENGTH) { x >> 1; }\nend_of_edit")
    assert edit.writes == () and [s.words for s in edit.segments] == [("edit", "604:604")]
    assert edit.segments[0].stdin == "    if (n > MAX_KEY_LENGTH) { x >> 1; }"
    assert [w.path for w in read_command("editor notes.txt > out.txt").writes] == ["out.txt"]


@pytest.mark.parametrize(
    "command",
    [
        "perl -0777 -pe 's/a/b/s' -i src/parse.py",
        "perl -i -pe 's/a/b/' src/parse.py",
        "perl -pi -e 's/a/b/' src/parse.py",
    ],
)
def test_perls_program_is_not_a_file_it_writes_in_place(command: str) -> None:
    assert [w.path for w in read_command(command).writes] == ["src/parse.py"]
