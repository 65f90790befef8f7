"""The reading of commands and failures, rule by rule: each rule a case that must trip and one
that must not, written after a shape seen in a real public trajectory (`bench/corpus/`; each
case names the run it was modelled on). The transcripts are ours, minimal, in the agent's own
result format (mini-swe-agent's `<returncode>` envelope, one `bash` tool)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from chat import Chat
from scenario_loader import analyse

from proxy.engine.core import Engine
from proxy.engine.detectors.reverify_owed import unseen_by
from proxy.settings.policy import load_policy

Call = tuple[str, dict[str, str], str]
BASH = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    }
]


def bash(command: str, printed: str = "", code: int | None = 0) -> Call:
    """A call and its result in mini-swe-agent's envelope; with no code, the bare output as
    SWE-agent 0.x shows it (no exit code at all)."""
    if code is None:
        return ("bash", {"command": command}, printed)
    return ("bash", {"command": command}, f"<returncode>{code}</returncode>\n<output>\n{printed}\n</output>")


TRACE = 'Traceback (most recent call last):\n  File "/testbed/reproduce_issue.py", line 9, in <module>\n'
ATTRIBUTE = TRACE + "AttributeError: module 'collections' has no attribute 'Mapping'"
RUNNER_FAIL = (
    "FAIL: test_fast_delete (delete.tests.FastDeleteTests)\nTraceback (most recent call last):\n"
    '  File "/testbed/tests/delete/tests.py", line 482, in test_fast_delete\n    self.assertIsNone(u.pk)\n'
    "AssertionError: 1 is not None\n\n----------------------------------------------------------------------\n"
    "Ran 45 tests in 0.321s\n\nFAILED (failures=1)"
)
RUNNER_PASS = "----------------------------------------------------------------------\nRan 45 tests in 0.298s\n\nOK"
EDIT = "sed -i 's/collections.Mapping/Mapping/' src/marshmallow/marshalling.py"
EDIT_2 = "sed -i '3i from marshmallow.compat import Mapping' src/marshmallow/marshalling.py"
PY_EDIT = (
    "from pathlib import Path\np = Path('src/marshmallow/marshalling.py')\ns = p.read_text()\n"
    "p.write_text(s.replace('collections.Mapping', 'Mapping'))\nprint('patched')\n"
)
PY_RUNS_TESTS = "import subprocess\nsubprocess.run(['pytest', '-q', 'tests/test_marshalling.py'], check=False)\n"
MARSHALLING = "src/marshmallow/marshalling.py"
PROBE = "from marshmallow.marshalling import Marshaller"
PROBE_FAILS_IN = (
    'Traceback (most recent call last):\n  File "<string>", line 1, in <module>\n  File "{file}", line 3, in <module>\n'
    "NameError: name 'Mapping' is not defined"
)
SYNTAX = f"3:from collections import Mapping\nSorry: IndentationError: unexpected indent ({MARSHALLING}, line 4)"
PYTEST_Q_FAIL = (
    "F                                                                        [100%]\n"
    "___________________________ test_dump_mapping ___________________________\n"
    "    def test_dump_mapping():\n>       assert dump({'a': 1}) == {'a': 1}\n"
    "E       AttributeError: module 'collections' has no attribute 'Mapping'\n"
    "tests/test_marshalling.py:7: AttributeError\n"
    "FAILED tests/test_marshalling.py::test_dump_mapping - AttributeError: module 'collections' has no attri...\n"
    "1 failed, 3 warnings in 0.19s"
)
NOT_A_TEST = (
    "\n=============================== warnings summary ===============================\n"
    "7 warnings in 0.03s\nERROR: not found: /testbed/tests/test_marshalling.py::test_dump_alias\n"
    "(no match in any of [<Module test_marshalling.py>])"
)
PY_EDIT_IF_FOUND = (
    "from pathlib import Path\np = Path('src/marshmallow/marshalling.py')\ns = p.read_text()\n"
    "if 'collections.Mapping' in s:\n    p.write_text(s.replace('collections.Mapping', 'Mapping'))\n"
    "else:\n    print('pattern not found')\n"
)
WARNING = "/testbed/astropy/table/table.py:1246: FutureWarning: structured arrays will be added as Column objects"
AT_EXIT = (
    "Exception ignored in: <function Pool.__del__ at 0x7f3a2c1d0ee0>\nTraceback (most recent call last):\n"
    '  File "/usr/lib/python3.11/multiprocessing/pool.py", line 268, in __del__\n'
    "ResourceWarning: unclosed running multiprocessing pool"
)


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    """The public run (corpus source/run) whose shape the case follows."""
    turns: Sequence[Sequence[Call]]
    pattern: str
    trips: bool
    system: str = "You are a helpful assistant that can interact with a computer."
    """The agent's system prompt (a role's, in a multi-agent scaffold)."""


READS = [
    [bash(f"cat src/{word}.py", f"def {word}(): pass")]
    if kind == "cat"
    else [bash(f"grep -rn {word} src/", f"src/fields.py:1:{word}")]
    for kind, word in (
        ("cat", "fields"),
        ("cat", "schema"),
        ("cat", "utils"),
        ("grep", "Mapping"),
        ("grep", "dump"),
        ("cat", "fields"),
        ("grep", "load"),
        ("cat", "schema"),
        ("grep", "Mapping"),
        ("cat", "utils"),
    )
]
"""Ten turns of reading that go back over files and searches five and more turns old: revisits, not
a short cycle of two to four calls (that is ping_pong's)."""
LOCATOR = (
    "You are a helpful assistant tasked to gather project contextual information related to the issue. "
    "DO NOT EDIT THE CODE IN THE REPOSITORY except `reproduce.py`!!!"
)
PROGRAMMER = "You are an autonomous programmer. DO NOT EDIT ANY TEST CODE IN THE REPOSITORY!!!"

WRAPT = (
    "Traceback (most recent call last):\n"
    '  File "/testbed/reproduce.py", line 1, in <module>\n    import astroid\n'
    '  File "/testbed/astroid/decorators.py", line 27, in <module>\n    import wrapt\n'
    '  File "/opt/miniconda3/envs/testbed/lib/python3.11/site-packages/wrapt/decorators.py", line 34, in <module>\n'
    "    from inspect import formatargspec\n"
    "ImportError: cannot import name 'formatargspec' from 'inspect'"
)
OWN_IMPORT = (
    "Traceback (most recent call last):\n"
    '  File "/testbed/reproduce.py", line 1, in <module>\n    import astroid\n'
    '  File "/testbed/astroid/__init__.py", line 27, in <module>\n    from astroid.nodes import Lambda\n'
    "ImportError: cannot import name 'Lambda' from 'astroid.nodes'"
)


GUARDED_EDIT = """python - <<'PY'
from pathlib import Path
p = Path('django/forms/widgets.py')
s = p.read_text()
old = "    input_type = 'radio'\\n"
if old in s:
    s = s.replace(old, old + "    checked_attribute = {'checked': True}\\n", 1)
    p.write_text(s)
    print("patched")
else:
    print("pattern not found")
PY"""
GUARDED_EDIT_2 = GUARDED_EDIT.replace("checked_attribute", "option_inherits_attrs")


def _footer(where: str) -> str:
    return f"(Open file: n/a)\n(Current directory: {where})\nbash-$"


TEXT_BUFFER = "/fasterxml__jackson-core/src/main/java/TextBuffer.java"


def _editor_edit(line: int, total: int) -> Call:
    """SWE-agent's `edit` of one line of the open file, `>` in its code, and what the editor printed."""
    command = f"edit {line}:{line}\n    if (curr.length >= minSize > MAX_KEY_LENGTH) {{ throw new X(); }}\nend_of_edit"
    return bash(command, f"[File: {TEXT_BUFFER} ({total} lines total)]\n{line}:    if (n > MAX) {{", None)


def _repro(error: str = "key too long") -> Call:
    return bash("python reproduce_bug.py", TRACE + f"ValueError: {error}", None)


def _edits_after(check: Call) -> list[list[Call]]:
    """`check` failing, then two edits of TextBuffer.java with SWE-agent's editor (`>` in their
    code), then a look at the file: no re-run between."""
    look = bash("open src/main/java/TextBuffer.java 600", f"[File: {TEXT_BUFFER} (722 lines total)]", None)
    return [[check], [_editor_edit(604, 721)], [_editor_edit(611, 722)], [look]]


def _java_test() -> Call:
    out = (
        "[ERROR] Tests run: 1, Failures: 1, Errors: 0, Skipped: 0\n"
        "[ERROR] TestTextBuffer.testExpand:41 expected:<722> but was:<721>\n[INFO] BUILD FAILURE"
    )
    return bash("mvn -q test -Dtest=TestTextBuffer", out, 1)


CASES = [
    # An installed package that cannot import under this Python is the machine's problem.
    Case(
        "the repository's own import error, the same after each edit, is stuck",
        "mswea2-pr816-deepseek-chat-lite-dev-noparallel/pylint-dev__astroid-1333",
        [
            [bash("python reproduce.py", OWN_IMPORT, 1)],
            [bash(EDIT)],
            [bash("python reproduce.py", OWN_IMPORT, 1)],
            [bash(EDIT_2)],
            [bash("python reproduce.py", OWN_IMPORT, 1)],
        ],
        "stuck_same_diagnostic",
        True,
    ),
    Case(
        "an installed package failing to import under this Python is no failure of the work",
        "mswea2-pr816-deepseek-chat-lite-dev-noparallel/pylint-dev__astroid-1333",
        [
            [bash("python reproduce.py", WRAPT, 1)],
            [bash(EDIT)],
            [bash("python reproduce.py", WRAPT, 1)],
            [bash(EDIT_2)],
            [bash("python reproduce.py", WRAPT, 1)],
        ],
        "stuck_same_diagnostic",
        False,
    ),
    # A role told by its own prompt not to edit reads for a living.
    Case(
        "an editing role that reads and re-reads for ten turns is told to change something",
        "coder-sweagent0-gpt4-lite/sympy__sympy-19487",
        READS,
        "read_stagnation",
        True,
        system=PROGRAMMER,
    ),
    Case(
        "a call chain followed across files for nine turns, back to the file it means to edit, is not stagnation",
        "coder-sweagent0-gpt4-lite/matplotlib__matplotlib-23299",
        [
            [bash(command, shown, None)]
            for command, shown in (
                ("open lib/matplotlib/pyplot.py", "[File: lib/matplotlib/pyplot.py (3236 lines total)]\n1:import sys"),
                ("goto 209", "209:def switch_backend(newbackend):"),
                ('search_file "rc_context"', 'Found 3 matches for "rc_context" in lib/matplotlib/pyplot.py'),
                ("goto 590", "590:def rc_context(rc=None, fname=None):"),
                (
                    "open lib/matplotlib/__init__.py",
                    "[File: lib/matplotlib/__init__.py (1459 lines total)]\n1:import atexit",
                ),
                ('search_file "def rc_context"', 'Found 1 matches for "def rc_context" in lib/matplotlib/__init__.py'),
                ("goto 1058", "1058:def rc_context(rc=None, fname=None):"),
                ("open lib/matplotlib/pyplot.py", "[File: lib/matplotlib/pyplot.py (3236 lines total)]\n1:import sys"),
                ("goto 209", "209:def switch_backend(newbackend):"),
            )
        ]
        + [[_editor_edit(211, 3237)]],
        "read_stagnation",
        False,
        system=PROGRAMMER,
    ),
    Case(
        "a role whose prompt forbids editing the code is never told to edit",
        "coder-sweagent0-gpt4-lite/pallets__flask-5063",
        READS,
        "read_stagnation",
        False,
        system=LOCATOR,
    ),
    # A program file run is a check; the same script passing later clears its failure.
    Case(
        "a repro script failing the same way after each edit is stuck",
        "mswea2-pr816-deepseek-chat-lite-dev-noparallel/marshmallow-code__marshmallow-1343",
        [
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
            [bash(EDIT)],
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
            [bash(EDIT_2)],
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
        ],
        "stuck_same_diagnostic",
        True,
    ),
    Case(
        "a repro script that passes clears its failure: later edits owe nothing",
        "mswea2-pr816-deepseek-chat-lite-dev-noparallel/marshmallow-code__marshmallow-1343",
        [
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
            [bash(EDIT)],
            [bash("python reproduce_issue.py", "validated: {}", 0)],
            [bash(EDIT_2)],
            [bash("sed -i 's/a/b/' src/marshmallow/schema.py")],
        ],
        "reverify_owed",
        False,
    ),
    Case(
        "a probe failing through the edited file ran the edit: no re-run owed",
        "mswea1-cam-gpt5-nano/django__django-12193",
        [
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
            [bash(EDIT)],
            [bash(f"python -c '{PROBE}'", PROBE_FAILS_IN.format(file="/testbed/" + MARSHALLING), 1)],
        ],
        "reverify_owed",
        False,
    ),
    Case(
        "a probe failing in its own code only did not run the edit: a re-run owed",
        "mswea1-cam-gpt5-nano/django__django-12193",
        [
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
            [bash(EDIT)],
            [bash(f"python -c '{PROBE}'", PROBE_FAILS_IN.format(file="<string>"), 1)],
        ],
        "reverify_owed",
        True,
    ),
    Case(
        "a shell given a search and a syntax check as a string runs no check: edits after it owe nothing",
        "mswea1-cam-gpt5-nano/sphinx-doc__sphinx-9320",
        [
            [bash(f"bash -lc 'grep -n Mapping {MARSHALLING} && python -m py_compile {MARSHALLING}'", SYNTAX, 1)],
            [bash(EDIT)],
            [bash(EDIT_2)],
        ],
        "reverify_owed",
        False,
    ),
    Case(
        "a shell given a repro script as a string runs that check: edits after it owe a re-run",
        "mswea1-cam-gpt5-nano/sphinx-doc__sphinx-9320",
        [[bash("bash -lc 'python reproduce_issue.py'", ATTRIBUTE, 1)], [bash(EDIT)], [bash(EDIT_2)]],
        "reverify_owed",
        True,
    ),
    Case(
        "inline Python that edits and then runs the failing tests is a check: its failure is the same one again",
        "mswea1-cam-gpt5-mini-high/sphinx-doc__sphinx-8548",
        [
            [bash("pytest -q tests/test_marshalling.py", PYTEST_Q_FAIL, 1)],
            [bash(f"python - <<'PY'\n{PY_EDIT}{PY_RUNS_TESTS}PY", PYTEST_Q_FAIL + "\npatched")],
            [bash("cat src/marshmallow/marshalling.py", "class Marshaller:")],
            [bash("pytest -q tests/test_marshalling.py", PYTEST_Q_FAIL, 1)],
        ],
        "stuck_same_diagnostic",
        True,
    ),
    Case(
        "inline Python that edits and then runs the tests, passing, owes nothing",
        "mswea1-cam-gpt5-mini-high/sphinx-doc__sphinx-8548",
        [
            [bash("pytest -q tests/test_marshalling.py", PYTEST_Q_FAIL, 1)],
            [bash(f"python - <<'PY'\n{PY_EDIT}{PY_RUNS_TESTS}PY", "1 passed in 0.21s\npatched")],
            [bash("sed -i 's/x/y/' src/marshmallow/schema.py")],
            [bash("sed -i 's/y/z/' src/marshmallow/schema.py")],
        ],
        "reverify_owed",
        False,
    ),
    # A test runner by its report, not its name (Django's `runtests.py`).
    Case(
        "Django's runner failing the same way three times is stuck",
        "openhands-codeact-v0.15-verified50/django__django-11087",
        [[bash("python tests/runtests.py delete -v 2", RUNNER_FAIL, 1)], [bash(EDIT)]] * 2
        + [[bash("python tests/runtests.py delete -v 2", RUNNER_FAIL, 1)]],
        "stuck_same_diagnostic",
        True,
    ),
    Case(
        "Django's runner reporting OK clears the failure",
        "openhands-codeact-v0.15-verified50/django__django-11087",
        [
            [bash("python tests/runtests.py delete -v 2", RUNNER_FAIL, 1)],
            [bash(EDIT)],
            [bash("./tests/runtests.py delete", RUNNER_PASS, 0)],
            [bash(EDIT_2)],
            [bash("sed -i 's/x/y/' django/db/models/deletion.py")],
        ],
        "reverify_owed",
        False,
    ),
    # What is not an edit of the sources.
    Case(
        "two edits of the sources after a failure, no re-run, owe it",
        "mswea2-pr816-deepseek-chat-lite-test/django__django-14672",
        [[bash("python reproduce_issue.py", ATTRIBUTE, 1)], [bash(EDIT)], [bash(EDIT_2)]],
        "reverify_owed",
        True,
    ),
    Case(
        "removing scratch files and backing up a file are no edits",
        "openhands-codeact-v0.15-verified50/astropy__astropy-13579",
        [
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
            [bash("rm /workspace/reproduce_wcs_issue.py")],
            [bash("cp src/marshmallow/marshalling.py src/marshmallow/marshalling.py.backup")],
        ],
        "reverify_owed",
        False,
    ),
    Case(
        "putting back a kept copy of a file undoes the agent's change: no edit",
        "mswea2-pr816-deepseek-chat-lite-test/django__django-10924",
        [
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
            [bash("cat django/db/models/fields/__init__.py", "class Field:")],
            [bash("cat src/marshmallow/marshalling.py", "class Marshaller:")],
            [bash("cp django/db/models/fields/__init__.py.backup django/db/models/fields/__init__.py")],
            [bash("mv /testbed/src/marshmallow/marshalling.py.orig src/marshmallow/marshalling.py")],
        ],
        "reverify_owed",
        False,
    ),
    Case(
        "a copy over a source file from elsewhere is an edit",
        "mswea2-pr816-deepseek-chat-lite-test/django__django-10924",
        [
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
            [bash("cat django/db/models/fields/__init__.py", "class Field:")],
            [bash("cat src/marshmallow/marshalling.py", "class Marshaller:")],
            [bash("cp /tmp/fixed_fields.py django/db/models/fields/__init__.py")],
            [bash("cp src/marshmallow/marshalling.py.new src/marshmallow/marshalling.py")],
        ],
        "reverify_owed",
        True,
    ),
    Case(
        "new scripts written with a here-document are the agent's own, not edits",
        "mswea2-pr816-deepseek-chat-lite-test/django__django-11179",
        [
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
            [bash("cat > test_fix.py << 'EOF'\nimport shutil\nif len(lines) > 2:\n    rm = 1\nEOF")],
            [bash("cat > verify_fix.py << 'EOF'\nprint(1 > 0)\nEOF\npython verify_fix.py", "True", 0)],
        ],
        "reverify_owed",
        False,
    ),
    Case(
        "a file read before and then rewritten whole is an edit of the sources",
        "mswea2-pr816-deepseek-chat-lite-test/django__django-11179",
        [
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
            [bash("cat src/marshmallow/compat.py", "import collections")],
            [bash("cat > src/marshmallow/compat.py << 'EOF'\nimport collections.abc\nEOF")],
            [bash(EDIT)],
        ],
        "reverify_owed",
        True,
    ),
    Case(
        "scratch files under /tmp are the agent's own, even edited in place",
        "openhands-codeact-v0.15-verified50/astropy__astropy-13579",
        [
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
            [bash("sed -i 's/print(x)/print(x, y)/' /tmp/debug_marshal.py")],
            [bash("cat > /tmp/check.py << 'EOF'\nprint(1)\nEOF\nsed -i 's/1/2/' /tmp/check.py")],
        ],
        "reverify_owed",
        False,
    ),
    Case(
        "a project checked out under /tmp: a file read there and then edited is a source edit",
        "bench/recovery.py (every repository copied under the temporary directory)",
        [
            [bash("python -m pytest", ATTRIBUTE, 1)],
            [bash("cat /tmp/tmpq1/calc/calc.py", "def add(a, b):\n    return a - b")],
            [bash("sed -i 's/a - b/a + b/' /tmp/tmpq1/calc/calc.py")],
            [bash("sed -i 's/return a + b/return b + a/' /tmp/tmpq1/calc/calc.py")],
        ],
        "reverify_owed",
        True,
    ),
    Case(
        "inline probes whose code compares with `>` write nothing",
        "mswea2-pr816-deepseek-chat-lite-dev/pylint-dev__astroid-1866",
        [
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
            [bash("python - <<'PY'\nlines = open('setup.py').readlines()\nprint(len(lines) > limit)\nPY", "True")],
            [bash('python -c "import marshmallow as m; print(len(m.__all__) > limit)"', "True")],
        ],
        "reverify_owed",
        False,
    ),
    Case(
        "inline Python that rewrites a source file is an edit of the sources",
        "mswea1-cam-gpt5-mini/sphinx-doc__sphinx-7748",
        [
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
            [bash(f"python - <<'PY'\n{PY_EDIT}PY", "patched")],
            [bash("python3 -c \"open('src/marshmallow/marshalling.py', 'a').write('\\n# done\\n')\"")],
        ],
        "reverify_owed",
        True,
    ),
    Case(
        "inline Python that reads a source file, writes a new file of its own, or writes only if, edits nothing",
        "mswea1-cam-gpt5-nano/sphinx-doc__sphinx-9320",
        [
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
            [
                bash(
                    "python - <<'PY'\nfrom pathlib import Path\nprint(Path('src/marshmallow/marshalling.py').read_text()[:80])\nPY"
                )
            ],
            [bash("python - <<'PY'\nopen('check_fix.py', 'w').write('import marshmallow\\n')\nPY")],
            [bash(f"python - <<'PY'\n{PY_EDIT_IF_FOUND}PY", "pattern not found")],
        ],
        "reverify_owed",
        False,
    ),
    # What could not run is the machine's problem, not the work's.
    Case(
        "pytest given a test id that is not there ran no test: edits after it owe no re-run",
        "mswea1-cam-gpt5-mini-minimal/sphinx-doc__sphinx-9229",
        [
            [bash("pytest tests/test_marshalling.py::test_dump_alias -q", NOT_A_TEST, 4)],
            [bash(EDIT)],
            [bash(EDIT_2)],
        ],
        "reverify_owed",
        False,
    ),
    Case(
        "pytest given a test that is there and fails: edits after it owe a re-run",
        "mswea1-cam-gpt5-mini-minimal/sphinx-doc__sphinx-9229",
        [
            [bash("pytest tests/test_marshalling.py::test_dump_mapping -q", PYTEST_Q_FAIL, 1)],
            [bash(EDIT)],
            [bash(EDIT_2)],
        ],
        "reverify_owed",
        True,
    ),
    Case(
        "a runner that is not installed is no failure, however often",
        "mswea2-pr816-deepseek-chat-lite-dev-noparallel/pydicom__pydicom-1413",
        [[bash("pytest tests/test_valuerep.py", "bash: line 1: pytest: command not found", 127)]] * 3,
        "stuck_same_diagnostic",
        False,
    ),
    Case(
        "a missing third-party module is no failure of the work",
        "openhands-codeact-v0.15-verified50/django__django-10554",
        [[bash("python reproduce.py", TRACE + "ModuleNotFoundError: No module named 'pytz'", 1)]] * 3,
        "stuck_same_diagnostic",
        False,
    ),
    Case(
        "a program that is not there, run again and again, is a call failing the same way",
        "sweagent0-msb-java-deepseek-chat-v2/googlecontainertools__jib-4035",
        [[bash("javac -cp . Test.java", "/bin/bash: line 7: javac: command not found", 127)]] * 3,
        "repeat_failed_call",
        True,
    ),
    Case(
        "a program that is not there, run once between other steps, is no repeated failure",
        "sweagent0-msb-java-deepseek-chat-v2/googlecontainertools__jib-4035",
        [
            [bash("javac -cp . Test.java", "/bin/bash: line 7: javac: command not found", 127)],
            [bash("ls /usr/lib/jvm", "java-17-openjdk-amd64")],
            [bash("javac -cp . Test.java", "/bin/bash: line 9: javac: command not found", 127)],
            [bash("export PATH=/usr/lib/jvm/java-17-openjdk-amd64/bin:$PATH && javac -version", "javac 17")],
        ],
        "repeat_failed_call",
        False,
    ),
    Case(
        "a program that is not there, run again and again, never succeeded",
        "sweagent0-msb-java-deepseek-chat-v2/googlecontainertools__jib-4035",
        [[bash("javac -cp . Test.java", "/bin/bash: line 7: javac: command not found", 127)]] * 6,
        "repeat_call",
        False,
    ),
    Case(
        "the same listing, run six times over with the same result, repeats a call",
        "sweagent0-msb-java-deepseek-chat-v2/googlecontainertools__jib-4035",
        [[bash("ls jib-core/src/main/java", "com")]] * 6,
        "repeat_call",
        True,
    ),
    Case(
        "prose sent as a command fails to parse the same way each time: no repeated output",
        "sweagent0-msb-java-doubao-pro-128k/fasterxml__jackson-databind-3851",
        [
            [
                bash(
                    f"The {word} method doesn't handle it",
                    "/bin/bash: line 1: unexpected EOF while looking for matching `''",
                    None,
                )
            ]
            for word in ("parse", "build", "visit", "read")
        ],
        "repeat_output",
        False,
    ),
    Case(
        "a program path that is not there never succeeded, however often",
        "sweagent0-msb-java-gpt-4o-mini/fasterxml__jackson-core-980",
        [[bash("./mvnw -q test", "/bin/bash: line 3: ./mvnw: No such file or directory", None)]] * 6,
        "repeat_call",
        False,
    ),
    Case(
        "prose run as a command is not found by the shell each time: no repeated output",
        "sweagent0-msb-java-doubao-pro-128k/fasterxml__jackson-core-964",
        [
            [bash(f"DISCUSSION\nThe {word} step", "/bin/bash: line 9: DISCUSSION: command not found", None)]
            for word in ("parse", "build", "visit", "read")
        ],
        "repeat_output",
        False,
    ),
    Case(
        "an edit SWE-agent's editor turns down, sent again and again, is a failing call",
        "sweagent0-msb-java-deepseek-chat-v2/fasterxml__jackson-databind-3621",
        [
            [
                bash(
                    "edit 12:12\n    return x\nend_of_edit",
                    "Your proposed edit has introduced new syntax error(s). Please read this error message "
                    "carefully and then retry editing the file.\nERRORS:\n- E999 IndentationError",
                    None,
                )
            ]
        ]
        * 3,
        "repeat_failed_call",
        True,
    ),
    Case(
        "an edit SWE-agent's editor turns down never succeeded, however often",
        "sweagent0-msb-java-deepseek-chat-v2/fasterxml__jackson-databind-3621",
        [
            [
                bash(
                    "edit 12:12\n    return x\nend_of_edit",
                    "Your proposed edit has introduced new syntax error(s).\nERRORS:\n- E999 IndentationError",
                    None,
                )
            ]
        ]
        * 6,
        "repeat_call",
        False,
    ),
    Case(
        "installs of different packages print the same warning and nothing else: no repeated output",
        "mswea2-pr816-deepseek-chat-lite-test/django__django-11797",
        [
            [bash(f"pip install {name} -q", "WARNING: Running pip as the 'root' user can result in broken permissions")]
            for name in ("pytz", "sqlparse", "asgiref", "tzdata")
        ],
        "repeat_output",
        False,
    ),
    Case(
        "a module missing between runs breaks a run of outputs",
        "mswea2-pr816-deepseek-chat-lite-test/django__django-11797",
        [
            [bash("pip install pytz -q", "Successfully installed pytz")],
            [bash("python reproduce_issue.py", TRACE + "ModuleNotFoundError: No module named 'sqlparse'", 1)],
            [bash("pip install sqlparse -q", "Successfully installed pytz")],
            [bash("python reproduce_issue.py", TRACE + "ModuleNotFoundError: No module named 'asgiref'", 1)],
            [bash("pip install asgiref -q", "Successfully installed pytz")],
        ],
        "repeat_output",
        False,
    ),
    # Noise is not a failure's signature.
    Case(
        "three different failures printed under the same warning are three failures",
        "openhands-codeact-v0.15-verified50/astropy__astropy-13236",
        [
            [bash("python reproduce.py", f"{WARNING}\n{TRACE}ValueError: Number of world inputs (2) != 3", 1)],
            [bash("python reproduce.py", f"{WARNING}\n{TRACE}TypeError: unhashable type: 'list'", 1)],
            [bash("python reproduce.py", f"{WARNING}\n{TRACE}KeyError: 'helioprojective'", 1)],
        ],
        "stuck_same_diagnostic",
        False,
    ),
    Case(
        "runs that exit 0 printing a warning and an ignored exception at exit have not failed",
        "openhands-codeact-v0.15-verified50/astropy__astropy-13236",
        [
            [bash(f"python experiment_{n}.py", f"{WARNING}\n  warnings.warn(\nresult {n}\n{AT_EXIT}", 0)]
            for n in range(6)
        ],
        "stuck_same_diagnostic",
        False,
    ),
    # A probe is an experiment until the agent runs it again as its test.
    Case(
        "the same probe failing again after edits is stuck",
        "bench/recovery.py: Qwen2.5-Coder-1.5B testing with `python -c` asserts",
        [
            [bash('python -c "from calc import add; assert add(2, 3) == 5"', TRACE + "AssertionError", 1)],
            [bash("sed -i 's/a - b/a + b + 1/' calc.py")],
            [bash('python -c "from calc import add; assert add(2, 3) == 5"', TRACE + "AssertionError", 1)],
            [bash('python -c "from calc import add; assert add(2, 3) == 5"', TRACE + "AssertionError", 1)],
        ],
        "stuck_same_diagnostic",
        True,
    ),
    Case(
        "different probes meeting the same error are exploration",
        "mswea2-pr816-deepseek-chat-lite-dev-rerun/pylint-dev__astroid-1333",
        [
            [bash(f'python -c "import astroid; astroid.{name}()"', TRACE + "AttributeError: no attribute 'x'", 1)]
            for name in ("parse", "extract_node", "MANAGER.ast_from_file")
        ],
        "stuck_same_diagnostic",
        False,
    ),
    Case(
        "the same failure after the agent rewrote its own test script is no repeat",
        "openhands-codeact-v0.15-verified50/django__django-11179",
        [
            [
                bash(
                    "cat > test_delete.py << 'EOF'\nrun(1)\nEOF\npython test_delete.py", TRACE + "IntegrityError: FK", 1
                )
            ],
            [
                bash(
                    "cat > test_delete.py << 'EOF'\nrun(2)\nEOF\npython test_delete.py", TRACE + "IntegrityError: FK", 1
                )
            ],
            [
                bash(
                    "cat > test_delete.py << 'EOF'\nrun(3)\nEOF\npython test_delete.py", TRACE + "IntegrityError: FK", 1
                )
            ],
        ],
        "stuck_same_diagnostic",
        False,
    ),
    # Outputs compared by what they say.
    Case(
        "the same status call whose output differs only in a timing repeats",
        "issue 26, cause 6 (a poll that reports `checked in 0.021s`)",
        [[bash("git status --short", f"M setup.py\nchecked in 0.0{n}1s")] for n in (2, 3, 5)],
        "repeat_call",
        True,
    ),
    Case(
        "a status call whose output makes progress does not repeat",
        "issue 26, cause 6",
        [[bash("git status --short", f"M setup.py\nindexed {n} of 50 files")] for n in (10, 20, 30)],
        "repeat_call",
        False,
    ),
    Case(
        "different searches that find nothing are not one repeated output",
        "mswea2-pr816-deepseek-chat-lite-dev-rerun/pylint-dev__astroid-1333",
        [[bash(f"git log -p -- astroid/modutils.py | grep {name}", "", 1)] for name in ("_has_init", "_spec", "check")],
        "repeat_output",
        False,
    ),
    # A `cd` prints nothing: what it did is the directory SWE-agent's footer names.
    Case(
        "`cd ..` that leaves the shell where it was, again and again, repeats",
        "sweagent0-msb-java-deepseek-chat-v2/googlecontainertools__jib-4144",
        [[bash("cd ..", _footer("/"), None)] for _ in range(4)],
        "repeat_call",
        True,
    ),
    Case(
        "`cd ..` climbing a tree, one directory up each time, does not repeat",
        "sweagent0-msb-java-deepseek-chat-v2/googlecontainertools__jib-4144",
        [[bash("cd ..", _footer(where), None)] for where in ("/w/jib/a/b", "/w/jib/a", "/w/jib", "/w")],
        "repeat_call",
        False,
    ),
    # SWE-agent's editor command carries the new text after it: code, not shell (`>` no redirect).
    Case(
        "editor edits with `>` in their code, on a live failure, owe a re-run of the check",
        "sweagent0-msb-java-doubao-pro-128k/fasterxml__jackson-core-150",
        _edits_after(_java_test()),
        "reverify_owed",
        True,
    ),
    # A Python script cannot load the Java it was edited in: re-running it cannot show the edits.
    Case(
        "editor edits of Java sources after a failing Python script owe it no re-run",
        "sweagent0-msb-java-doubao-pro-128k/fasterxml__jackson-core-150",
        _edits_after(_repro()),
        "reverify_owed",
        False,
    ),
    Case(
        "editor edits each followed by the check owe nothing",
        "sweagent0-msb-java-doubao-pro-128k/fasterxml__jackson-core-150",
        [[_repro()], [_editor_edit(604, 721)], [_repro()], [_editor_edit(611, 722)], [_repro("key too long (2)")]],
        "reverify_owed",
        False,
    ),
    Case(
        "the editor's usage line, answered to edits it could not take, is no output to use",
        "sweagent0-msb-java-doubao-pro-128k/fasterxml__jackson-databind-4249",
        [
            [
                bash(
                    f"edit /fasterxml__jackson-databind/reproduce_bug.py {span}\ntry:\n    x()\nend_of_edit",
                    "Usage: edit <start_line>:<end_line>\n" + _footer("/fasterxml__jackson-databind"),
                    None,
                )
            ]
            for span in ("6:6", "5:6", "4:6")
        ],
        "repeat_output",
        False,
    ),
    Case(
        "a read that prints the same usage text of a script each time repeats an output",
        "sweagent0-msb-java-doubao-pro-128k/fasterxml__jackson-databind-4249",
        [
            [bash(f"{reader} scripts/run.sh | head -3", "Usage: run.sh <module>\nRuns one module's tests.")]
            for reader in ("cat", "more", "less")
        ],
        "repeat_output",
        True,
    ),
    Case(
        "putting a file back as the repository has it (git checkout, git restore) undoes the agent's change: no edit",
        "mswea2-pr816-deepseek-chat-lite-dev/sqlfluff__sqlfluff-1733",
        [
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
            [bash("git checkout src/sqlfluff/rules/L036.py")],
            [bash("cd /testbed && git checkout -- src/marshmallow/fields.py")],
            [bash("git restore astroid/modutils.py")],
        ],
        "reverify_owed",
        False,
    ),
    Case(
        "a file checked out from another revision is an edit (it was read as no change at all)",
        "mswea1-cam-gpt5-mini-minimal/django__django-12406",
        [
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
            [bash("git checkout 68a0ae9c7f2d0dd85b2cca86f3c00ebfb763130d -- django/forms/widgets.py")],
            [bash("cd /testbed && git checkout v2.9.0 -- astroid/modutils.py 2>&1 | head -20")],
        ],
        "reverify_owed",
        True,
    ),
    Case(
        "an inline program's write under `if old in s:` that printed its branch's text is an edit",
        "mswea1-cam-gpt5-mini-minimal/django__django-12406",
        [
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
            [bash(GUARDED_EDIT, "patched")],
            [bash(GUARDED_EDIT_2, "patched")],
        ],
        "reverify_owed",
        True,
    ),
    Case(
        "the same programs that printed their `else` text wrote nothing",
        "mswea1-cam-gpt5-mini/django__django-12143",
        [
            [bash("python reproduce_issue.py", ATTRIBUTE, 1)],
            [bash(GUARDED_EDIT, "pattern not found")],
            [bash(GUARDED_EDIT_2, "pattern not found")],
        ],
        "reverify_owed",
        False,
    ),
    Case(
        "different searches that print the same findings repeat an output",
        "mswea2-pr816-deepseek-chat-lite-dev-rerun/pylint-dev__astroid-1333",
        [[bash(f"grep -rn {name} astroid/", "astroid/modutils.py:643:def _has_init(directory):")] for name in "abc"],
        "repeat_output",
        True,
    ),
]


OWED = "reverify_owed"
"""A case about what is an edit of the sources asks whether, at its end, a re-run of the check is
due as `reverify_owed` counts it (the failure model's flag, on edits the check can see), not when
the pattern speaks of it (it waits for the agent to move on: its own cases are in tests/scenarios)."""


def _trips(case: Case) -> list[str]:
    engine = Engine.of(load_policy("mini_swe_agent"))
    chat = Chat(system=case.system, tools=BASH, user="Fix the issue described in the PR.")
    tripped: list[str] = []
    for turn in case.turns:
        chat.turn(*turn)
        planned = analyse(engine, chat.bytes())
        assert planned is not None
        tripped += [t.pattern.name for t in planned.decision.new_trips]
        repair = planned.decision.state.repair
    if repair.reverify_owed and not unseen_by(repair):
        tripped.append(OWED)
    return tripped


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_reading_rule(case: Case) -> None:
    assert (case.pattern in _trips(case)) is case.trips, f"{case.name} (after {case.source})"


def test_every_rule_has_a_case_that_trips_and_one_that_does_not() -> None:
    patterns = {c.pattern for c in CASES}
    for pattern in patterns:
        assert {c.trips for c in CASES if c.pattern == pattern} == {True, False}, pattern
