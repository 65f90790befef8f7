"""Does the way a held edit is held help the model fix? (Beside an editor, its replacement kept
from being a copy of the line it replaces; in the one shell, its text to replace kept to the lines
to change.)

At a real stuck point of the recovery bench in OpenHands style (the test failed three times, two
edits that changed nothing, then the failing test and the code read), the proxy's action gate
asks for the editor's `str_replace` of one of the lines the failure points at, held as `old_str`
(`writing.pointed.changeable`); its `new_str` is the model's, any text but a copy of that line
(`writing.unlike`). This builds that retry with the proxy's own engine, then sends it to the
model server `--seeds` times in two arms, side by side per seed: as the proxy sends it and with
`new_str` free (the pattern taken out). Each reply's edit is applied to a fresh copy of the
repository and its tests run; it prints, per arm, how many replies were a call, changed the line
(a `new_str` unlike its `old_str`), and left the tests passing.

With `--style bash` (a one-shell agent, mini-swe-agent style) the held call is the shell's
in-place `sed` of the code file (`Vocabulary.shell_edit`): as the proxy sends it (its text to
replace held to the lines to change, `sed_script.held_script`) against the text to replace free
(`SED_SCRIPT`, as before the lines were held); per arm, how many replies were a call, changed the
file, and left the tests passing. To compare another commit's hold, run this file with that
checkout first on `PYTHONPATH`.

Run against the model server itself:

    python scripts/real_model.py serve qwen --port 8080 &
    python bench/held_edit.py --upstream http://127.0.0.1:8080 --seeds 12 [--repo vowels] \\
        [--gate action|finish] [--temperature 0.7] [--style openhands|bash]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from held_sed import written_call
from tiny_agent import REPOS, TOOLS, Tools, copy_repo, grade, stuck_start, tree_digest

from proxy.dialects import CHAT, plan_offline
from proxy.engine.core import Engine
from proxy.engine.plan.reply import Gate
from proxy.engine.writing.sed_script import SED_SCRIPT
from proxy.settings.policy import policy_from_mapping

POLICY = {"patterns": {"stuck_same_diagnostic": {"mode": "act"}}}
"""The defaults with the failure model's own pattern acting: the held edit is its step, and the
gates ask for it only while it acts (issue 61; it ships in shadow)."""


def stuck_and_read(root: Path, repo: str, style: str = "openhands") -> list[dict[str, Any]]:
    """The stuck start, then the failing test and the code read (the editor's view, or `sed -n`
    and `cat` in the one shell), each run for real."""
    edits = json.loads((REPOS / repo / "stuck.json").read_text())["edits"]
    messages = stuck_start(root, style, edits)
    tools = Tools(root, style)
    code = next(p for p in sorted(root.glob("*.py")) if p.name != "conftest.py")
    test = next(root.glob("tests/test_*.py"))
    reads = (
        [("str_replace_editor", {"command": "view", "path": str(path)}) for path in (test, code)]
        if style == "openhands"
        else [
            ("bash", {"command": f"sed -n '1,{len(test.read_text().splitlines())}p' tests/{test.name}"}),
            ("bash", {"command": f"cat {code}"}),
        ]
    )
    for n, (name, args) in enumerate(reads):
        call_id = f"call_read_{n}"
        function = {"name": name, "arguments": json.dumps(args)}
        messages.append({"role": "assistant", "content": "", "tool_calls": [{"id": call_id, "type": "function", "function": function}]})  # fmt: skip
        messages.append({"role": "tool", "tool_call_id": call_id, "content": tools.call(name, args)[0]})
    return messages


def held_retry(messages: list[dict[str, Any]], seed: int, gate: Gate = Gate.ACTION, temperature: float = 0.7, style: str = "openhands") -> dict[str, Any]:  # fmt: skip
    """A gate's retry (the action gate's: the reply had no call; the finish gate's: the reply was
    a finish), as the proxy would send it upstream."""
    tools = TOOLS[style]
    body = {"model": "qwen", "messages": messages, "tools": tools, "temperature": temperature, "seed": seed}
    planned = plan_offline(Engine.of(policy_from_mapping(POLICY, "held_edit")), CHAT, json.dumps(body).encode(), {})
    if planned is None or gate not in planned.decision.reply.gates:
        raise SystemExit(f"the engine arms no {gate.value} gate on this transcript")
    retry: dict[str, Any] = json.loads(planned.retry(gate))
    return retry


def command_schema(retry: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = retry["response_format"]["json_schema"]["schema"]["properties"]["arguments"]["properties"]["command"]  # fmt: skip
    return found


def sed_free(held: dict[str, Any]) -> dict[str, Any]:
    """The retry with its `sed`'s text to replace free (`SED_SCRIPT`), the file still held."""
    free: dict[str, Any] = json.loads(json.dumps(held))
    pattern = command_schema(free)["pattern"]
    command_schema(free)["pattern"] = f"^sed -i '{SED_SCRIPT}' " + pattern[pattern.rindex("/g?' ") + len("/g?' ") :]
    return free


def sed_outcome(stuck: Path, arguments: dict[str, Any] | None) -> tuple[bool, bool, bool, bool]:
    """(a call, it changed the file, the tests pass once it is run in a copy of `stuck`, and the
    hidden checks too: right)."""
    if arguments is None or not isinstance(arguments.get("command"), str):
        return False, False, False, False
    with tempfile.TemporaryDirectory() as parent:
        root = Path(shutil.copytree(stuck, Path(parent) / stuck.name))
        before = tree_digest(root)
        Tools(root, "bash").call("bash", {"command": arguments["command"].replace(str(stuck), str(root))})
        graded = grade(root)
        return True, tree_digest(root) != before, graded.tests, graded.solved


def new_str_schema(retry: dict[str, Any]) -> dict[str, Any]:
    schema = retry["response_format"]["json_schema"]["schema"]
    found: dict[str, Any] = schema["properties"]["arguments"]["properties"]["new_str"]
    return found


def ask(upstream: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """The call the model wrote, as JSON; None for a reply that is no call (or a server error)."""
    status, written = written_call(upstream, body, timeout=600)
    if status != 200:
        return None
    try:
        call = json.loads(written)
    except ValueError:
        return None
    arguments = call.get("arguments", call) if isinstance(call, dict) else None
    return arguments if isinstance(arguments, dict) else None


def outcome(stuck: Path, arguments: dict[str, Any] | None) -> tuple[bool, bool, bool, bool]:
    """(a call, its replacement is no copy of the text it replaces, the tests pass once it is
    applied to a copy of the repository as it is at the stuck point, `stuck`, and the hidden
    checks too: right)."""
    if arguments is None or not isinstance(arguments.get("new_str"), str) or not isinstance(arguments.get("path"), str):
        return False, False, False, False
    changed = arguments["new_str"] != arguments.get("old_str")
    with tempfile.TemporaryDirectory() as parent:
        root = Path(shutil.copytree(stuck, Path(parent) / stuck.name))
        Tools(root, "openhands").call("str_replace_editor", {**arguments, "path": str(root / Path(arguments["path"]).name)})  # fmt: skip
        graded = grade(root)
        return True, changed, graded.tests, graded.solved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", default="http://127.0.0.1:8080")
    parser.add_argument("--repo", default="vowels")
    parser.add_argument("--seeds", type=int, default=12)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--gate", choices=["action", "finish"], default="action")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--style", choices=["openhands", "bash"], default="openhands")
    args = parser.parse_args()
    second = "changed the line" if args.style == "openhands" else "changed the file"
    with tempfile.TemporaryDirectory() as parent:
        root = copy_repo(args.repo, Path(parent))
        messages = stuck_and_read(root, args.repo, args.style)
        totals = {"held": [0, 0, 0, 0], "free": [0, 0, 0, 0]}
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            held = held_retry(messages, seed, Gate(args.gate), args.temperature, args.style)
            if args.style == "bash":
                arms = {"held": held, "free": sed_free(held)}
            else:
                if "pattern" not in new_str_schema(held):
                    raise SystemExit("the proxy's retry holds no new_str pattern here: nothing to compare")
                free = json.loads(json.dumps(held))
                new_str_schema(free).pop("pattern")
                arms = {"held": held, "free": free}
            row = []
            for arm, body in arms.items():
                written = ask(args.upstream, body)
                if args.style == "bash":
                    call, kept, passed, right = sed_outcome(root, written)
                else:
                    call, kept, passed, right = outcome(root, written)
                for i, hit in enumerate((call, kept, passed, right)):
                    totals[arm][i] += hit
                shown = f" {(written or {}).get('command', '')[:90]!r}" if args.style == "bash" else ""
                row.append(f"{arm}: call {call:d} changed {kept:d} pass {passed:d} right {right:d}{shown}")  # fmt: skip
            print(f"seed {seed:2d}  " + "  |  ".join(row), flush=True)
    for arm, (call, kept, passed, right) in totals.items():
        print(
            f"{arm}: {call}/{args.seeds} calls, {kept}/{args.seeds} {second}, {passed}/{args.seeds} tests pass, "
            f"{right}/{args.seeds} right (the hidden checks too; {passed - right} gamed)"
        )


if __name__ == "__main__":
    main()
