"""Rendering in the agent's own vocabulary: a tool the request offers, arguments its schema accepts."""

from __future__ import annotations

import json
import re

import jsonschema
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from vocabularies import SHELL_TOOL, VOCABULARIES

from proxy.engine.reading.classify import Classifier
from proxy.engine.writing.vocabulary import Call, learn_vocabulary
from proxy.engine.writing.wording import resolve_path
from proxy.settings.policy import default_policy

CLASSIFIER = Classifier(default_policy().classify)
EXPECTED_READER = {
    "openhands": "str_replace_editor",
    "claude_code": "Read",
    "cline": "read_file",
    "goose": "developer__text_editor",
    "swe_agent": "bash",
    "mini_swe_agent": "bash",
    "codex": "shell",
}


def validate(call: Call, tools: list[dict[str, object]]) -> None:
    schema = next(t["function"]["parameters"] for t in tools if t["function"]["name"] == call.name)  # type: ignore[index]
    jsonschema.validate(dict(call.arguments), schema)


@pytest.mark.parametrize("agent", sorted(VOCABULARIES))
@pytest.mark.parametrize("line", [None, 42])
def test_read_directive_names_an_offered_tool_with_valid_arguments(agent: str, line: int | None) -> None:
    """Reading a file (at a line) renders a call to this agent's read tool, or its shell as a fallback."""
    tools = VOCABULARIES[agent]
    call = learn_vocabulary(tools, CLASSIFIER).read("/workspace/tests/test_parse.py", line)
    assert call is not None
    assert call.name == EXPECTED_READER[agent]
    validate(call, tools)
    assert "/workspace/tests/test_parse.py" in orjson.dumps(call.arguments).decode()


@pytest.mark.parametrize("agent", sorted(VOCABULARIES))
def test_run_directive_uses_the_shell_tool_in_its_own_shape(agent: str) -> None:
    """Running a command renders the agent's shell tool; Codex's takes an argv array."""
    tools = VOCABULARIES[agent]
    call = learn_vocabulary(tools, CLASSIFIER).run("python -m pytest tests/test_parse.py")
    assert call is not None and call.name == SHELL_TOOL[agent]
    validate(call, tools)
    if agent == "codex":
        assert call.arguments["command"] == ["bash", "-lc", "python -m pytest tests/test_parse.py"]


EXPECTED_EDITOR = {
    "openhands": ("str_replace_editor", {"command": "str_replace", "path": "/w/calc.py"}),
    "goose": ("developer__text_editor", {"command": "str_replace", "path": "/w/calc.py"}),
    "claude_code": ("Edit", {"file_path": "/w/calc.py"}),
}


@pytest.mark.parametrize("agent", sorted(VOCABULARIES))
def test_an_edit_directive_names_the_agents_replace_tool_quoting_the_lines_it_saw(agent: str) -> None:
    """Tools that replace old code with new render an edit call carrying the lines to replace as
    the agent saw them; the new code is the model's to write, so its argument is only named.
    Agents that edit through a shell, a patch or a diff get none (the remedy says it in words)."""
    tools = VOCABULARIES[agent]
    vocabulary = learn_vocabulary(tools, CLASSIFIER)
    call = vocabulary.edit("/w/calc.py", "    return a - b")
    if agent not in EXPECTED_EDITOR:
        assert call is None
        return
    assert call is not None
    name, fixed = EXPECTED_EDITOR[agent]
    assert call.name == name and fixed.items() <= call.arguments.items()
    assert "    return a - b" in call.arguments.values()
    assert vocabulary.new_arg is not None and vocabulary.new_arg not in call.arguments
    validate(Call(call.name, {**call.arguments, vocabulary.new_arg: "    return a + b"}), tools)


def test_no_tools_means_no_call() -> None:
    """With nothing to call, no call is rendered (the remedy falls back to plain words)."""
    vocabulary = learn_vocabulary([], CLASSIFIER)
    assert vocabulary.read("/a.py") is None and vocabulary.run("ls") is None


def test_render_is_copyable_json() -> None:
    """A rendered call is the tool name and its arguments as JSON."""
    assert Call("Read", {"file_path": "/a.py"}).render() == 'call Read with {"file_path":"/a.py"}'


@pytest.mark.parametrize(
    ("path", "known", "cwd", "expected"),
    [
        ("/abs/x.py", [], "", "/abs/x.py"),
        ("tests/t.py", ["/w/tests/t.py"], "", "/w/tests/t.py"),
        ("tests/t.py", [], "/repo", "/repo/tests/t.py"),
        ("src/p.py", ["/workspace/src/other.py"], "", "/workspace/src/p.py"),
        ("tests/t.py", ["/workspace/src/other.py"], "", "tests/t.py"),
    ],
)
def test_evidence_paths_are_written_the_agents_way(path: str, known: list[str], cwd: str, expected: str) -> None:
    """Relative paths from a runner become the agent's absolute paths when the transcript shows them."""
    assert resolve_path(path, known, cwd) == expected


SED = 'sed -i \'s/VOWELS = "aeio"/VOWELS = "aeiou"/\' '


@pytest.mark.parametrize(
    ("path", "operand", "held"),
    [
        ("/w/vowels/vowels.py", "vowels.py", True),
        ("/w/vowels/vowels.py", "./vowels.py", True),
        ("/w/vowels/vowels.py", "/w/vowels/vowels.py", True),
        ("/w/vowels/vowels.py", "tests/test_vowels.py", False),
        ("/w/vowels/vowels.py", "tests/vowels.py", False),
        ("/w/vowels/vowels.py", "/w/other/vowels.py", False),
        ("src/vowels.py", "src/vowels.py", True),
        ("src/vowels.py", "vowels.py", False),
        ("src/vowels.py", "src/vowels.py && python -m pytest", False),
    ],
    ids=[
        "by its name, from its folder",
        "the same, with ./",
        "as the agent wrote it",
        "the test of that name: refused (recovery bench, vowels)",
        "a file of that name elsewhere, which does not exist: refused (the same)",
        "another absolute path: refused",
        "a relative path, as written",
        "a relative path by its name alone: another file",
        "nothing after the file",
    ],
)
def test_an_edit_through_the_one_shell_is_held_to_its_file_and_no_other_of_that_name(
    path: str, operand: str, held: bool
) -> None:
    call = learn_vocabulary(VOCABULARIES["mini_swe_agent"], CLASSIFIER).shell_edit(path)
    assert call is not None
    pattern = call.arguments["command"].pattern
    assert bool(re.match(pattern, json.dumps(SED + operand)[1:-1])) is held  # as the model writes it


def test_the_held_sed_script_is_one_single_quoted_substitution() -> None:
    """Nothing but the quoted script comes before the file: no room to write past the name; and
    it substitutes (recovery bench, leap: held to any script, the model deleted the function)."""
    pattern = learn_vocabulary(VOCABULARIES["mini_swe_agent"], CLASSIFIER).shell_edit("vowels.py").arguments["command"]
    assert not re.match(pattern.pattern, "sed -i 's/a/b/' tests/test_vowels.py vowels.py")
    assert not re.match(pattern.pattern, 'sed -i "s/a/b/" vowels.py')
    assert re.match(pattern.pattern, "sed -i 's/a/b/g' vowels.py")
    assert not re.match(pattern.pattern, json.dumps("sed -i 's/a\\/b/c/' vowels.py")[1:-1])  # a `/` in a part
    assert not re.match(pattern.pattern, "sed -i '1,3d' vowels.py")  # a substitution, not a deletion
    assert not re.match(pattern.pattern, "sed -i 's/a/b' vowels.py")  # whole: sed rejects it unterminated


@pytest.mark.parametrize(
    ("command", "held"),
    [
        ("sed -i 's/self.balance -= amount/self.balance += amount/' bank.py", True),
        ("""sed -i 's/raise ValueError("no")/raise ValueError("insufficient funds")/' bank.py""", True),
        ("sed -i 's/def f(\\(x\\)):/def f(\\1, y):/' bank.py", True),
        ("sed -i 's/return a/return a\\n    return b/' bank.py", True),
        ("sed -i 's/def withdraw(self, amount):/def withdraw(self, amount):\n    if amount > 0:/' bank.py", False),
        ("sed -i 's/a\\nb/c/' bank.py", False),
        ("sed -i 's/ch in VOWELS/ch in \\'aeiou\\'/' bank.py", False),
        ("sed -i 's/if ch in VOWELS)/if ch in VOWELS and ch != ' bank.py", False),
    ],
    ids=[
        "one line",
        "double quotes in it (escaped in JSON)",
        "a back-reference",
        "a line break written by sed in the replacement",
        "a line break inside the s command: sed rejects it unterminated",
        "a line break looked for: sed never sees one (sed.never_matches)",
        "a quote after a backslash: no JSON escape (llama.cpp's 500), and the shell's quote ends",
        "cut at the quote the new text meant to hold: no closing delimiter, sed rejects it",
    ],
)
def test_the_held_sed_script_stays_on_one_line_as_the_model_writes_it(command: str, held: bool) -> None:
    """Recovery bench, bank and vowels: multi-line replacements in `sed -i 's/...'`, rejected
    as unterminated, sent turn after turn. The pattern holds the JSON text the model writes
    between the string's quotes (llama.cpp's grammar reads that)."""
    pattern = learn_vocabulary(VOCABULARIES["mini_swe_agent"], CLASSIFIER).shell_edit("bank.py").arguments["command"]
    written = json.dumps(command)[1:-1]  # as the model writes it inside the JSON string
    assert bool(re.match(pattern.pattern, written)) is held


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_whatever_text_the_held_sed_pattern_lets_the_model_write_is_a_json_string_of_one_line(
    data: st.DataObject,
) -> None:
    """llama.cpp turns the pattern into grammar rules over the characters between the quotes, and
    parses the reply as JSON after: a text the grammar let through that is no JSON string failed
    the reply (HTTP 500; stack seed 1, six times, with the pattern that let a bare `"` through)."""
    pattern = learn_vocabulary(VOCABULARIES["mini_swe_agent"], CLASSIFIER).shell_edit("bank.py").arguments["command"]
    written = data.draw(st.from_regex(pattern.pattern, fullmatch=True))
    command = json.loads(f'"{written}"')
    assert "\n" not in command and command.startswith("sed -i 's/") and command.endswith("bank.py")


STACK_POP = "    def pop(self):\n        item = self.items.pop(0)\n        return item\n"
"""stack.py's `pop` as the agent saw it (recovery bench, stack)."""


@pytest.mark.parametrize(
    ("lines", "script", "held"),
    [
        (STACK_POP, "s/item = self.items.pop(0)/item = self.items.pop()/", True),
        (STACK_POP, "s/return item/return self.items.pop()/", True),
        (STACK_POP, "s/return self.items.pop(0)/return self.items.pop(1)/", False),
        (STACK_POP, "s/self.items.pop(0)/self.items.pop(-1)/", True),
        (STACK_POP, "s/pop(0)/pop()/", True),
        (STACK_POP, "s/item/x/", False),
        (STACK_POP, "s/pop(self)/pop(self, 1)/", False),
        (STACK_POP, "s/item = self/x = self/", False),
        (STACK_POP, "s/elf.items.pop(0)/x/", False),
        (STACK_POP, "s/pop(self)://", False),
        (STACK_POP, "s/def pop(self):/def pop(self, i=-1):/", True),
        ('    raise ValueError("no")\n', 's/raise ValueError("no")/raise KeyError("no")/', True),
        ("    return a*b\n    return c\n", "s/return a*b/return a/", False),
        ("    return a*b\n    return c\n", "s/return c/return a/", True),
        ("    s = 'x'\n", "s/anything at all/y/", True),
    ],
    ids=[
        "a line of the function, whole",
        "another of its lines",
        "a line the file does not have: the model's own, sent four times (stack seed 1 at ba6fdd1)",
        "a line's end from a name: the model's fix of stack, six runs of twelve before lines were held whole",
        "a line's shorter end from a name",
        "a bare name at a line's end: it would match in other lines too",
        "the middle of a line (stack seed 0 at ba6fdd1, a fix that was wrong)",
        "a line's start, not its end",
        "an end that starts inside a name",
        "a header's end: the model deleted it, 5 seeds of 12 at the stack stuck point",
        "a header whole",
        "a line with double quotes, as the JSON text has them",
        "a line sed reads as a pattern (`*`): left out",
        "the other lines are still held",
        "no line sed or the shell reads as written: the text is free",
    ],
)
def test_a_held_sed_replaces_one_of_the_lines_to_change_as_the_file_has_them(
    lines: str, script: str, held: bool
) -> None:
    call = learn_vocabulary(VOCABULARIES["mini_swe_agent"], CLASSIFIER).shell_edit("stack.py", lines)
    assert call is not None
    written = json.dumps(f"sed -i '{script}' stack.py")[1:-1]  # as the model writes it inside the JSON string
    assert bool(re.match(call.arguments["command"].pattern, written)) is held


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_whatever_a_held_line_pattern_lets_the_model_write_replaces_a_line_the_file_has(data: st.DataObject) -> None:
    """The held text is the end of a line of the file, from its start or a name's, never a bare
    name alone, as sed reads it, in a JSON string llama.cpp's parser reads."""
    lines = STACK_POP + '        raise ValueError("empty stack")\n'
    pattern = learn_vocabulary(VOCABULARIES["mini_swe_agent"], CLASSIFIER).shell_edit("stack.py", lines)
    assert pattern is not None
    written = data.draw(st.from_regex(pattern.arguments["command"].pattern, fullmatch=True))
    command = json.loads(f'"{written}"')
    old = command.removeprefix("sed -i 's/").split("/", 1)[0]
    whole = {line.strip() for line in lines.splitlines()}
    assert old in whole or (
        any(line.endswith(old) and not line[-len(old) - 1].isidentifier() for line in whole)
        and (old[0].isalpha() or old[0] == "_")
        and not old.isidentifier()
    )


def test_a_request_learns_its_vocabulary_once_and_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """`Learnt`: the remedies, a force, the refuser and the gates share one vocabulary a request."""
    from proxy.engine.writing import vocabulary as module

    learnt_times: list[int] = []
    real = module.learn_vocabulary

    def counting(tools: object, classifier: Classifier) -> object:
        learnt_times.append(1)
        return real(tools, classifier)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "learn_vocabulary", counting)
    learnt = module.Learnt(VOCABULARIES["openhands"], CLASSIFIER)
    assert learnt_times == []  # nothing asked yet: nothing learnt
    first, second = learnt.vocabulary, learnt.vocabulary
    assert first is second
    assert learnt_times == [1]
    assert first.reader is not None and first.reader.name == EXPECTED_READER["openhands"]
