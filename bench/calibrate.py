"""How hard is each bench repository for the model on its own? One-shot fixes out of `--seeds`.

The model is shown the repository's code (its one source file), the failing test file and the
failing `python -m pytest` output, and asked for the whole file back, fixed, in one ```python
block. Each reply's file is written into a fresh copy of the repository and graded as the
recovery bench grades a run (`tiny_agent.grade`: its own tests, and its hidden checks since issue 61;
the calibration in `bench/records/calibration.jsonl` was graded on its own tests alone). The test
part of the recovery bench (`"part": "test"` in a repository's `stuck.json`) holds repositories
the model fixes this way in 2 to 8 samples of 10: solvable, not solved for free.

    python scripts/real_model.py serve qwen --port 8080 &
    python bench/calibrate.py --upstream http://127.0.0.1:8080/v1 [--repos a,b] [--part test]
        [--seeds 10] [--temperature 0.7] [--out bench/records/calibration.jsonl]

Without `--upstream` it starts llama-server from the cached build (`scripts/real_model.py`).
Each sample is one JSON line of `--out` (repository, seed, fixed, the reply), after a first line
with the command and the commit.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import openai
from recovery import model_server
from tiny_agent import WORK, copy_repo, grade, part_of, repos_in, run_shell

PROMPT = (
    "The test suite of this repository fails: `python -m pytest`.\n\n"
    "The code, `{name}`:\n```python\n{code}```\n\n"
    "The tests, `{test_name}`:\n```python\n{test}```\n\n"
    "The output of `python -m pytest`:\n```\n{output}\n```\n\n"
    "Fix the bug in the code (not in the tests). Reply with the whole corrected `{name}` in one "
    "```python code block."
)
_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


def prompt_for(root: Path) -> tuple[str, Path]:
    """The one-shot prompt for a fresh copy `root`, and the source file the reply replaces."""
    sources = [p for p in sorted(root.glob("*.py")) if p.name != "conftest.py"]
    if len(sources) != 1:
        raise SystemExit(f"{root.name}: calibration shows one source file; it has {len(sources)}")
    test = next(root.glob("tests/test_*.py"))
    output = run_shell("python -m pytest", root)[1].strip()
    text = PROMPT.format(
        name=sources[0].name,
        code=sources[0].read_text(),
        test_name=f"tests/{test.name}",
        test=test.read_text(),
        output=output,
    )
    return text, sources[0]


def written_file(reply: str) -> str | None:
    """The last fenced block of the reply: the file as the model wrote it."""
    blocks = _BLOCK.findall(reply)
    return blocks[-1] if blocks else None


def sample(client: openai.OpenAI, repo: str, seed: int, temperature: float, parent: Path) -> dict[str, object]:
    root = copy_repo(repo, parent / f"{repo}-{seed}-{time.monotonic_ns()}")
    text, source = prompt_for(root)
    reply = client.chat.completions.create(
        model="local",
        messages=[{"role": "user", "content": text}],
        temperature=temperature,
        seed=seed,
        max_tokens=512,
    )
    content = reply.choices[0].message.content or ""
    code = written_file(content)
    if code is not None:
        source.write_text(code)
    graded = grade(root) if code is not None else None
    fixed, gamed = graded is not None and graded.solved, graded is not None and graded.gamed
    return {"repo": repo, "part": part_of(repo), "seed": seed, "fixed": fixed, "gamed": gamed, "reply": content}


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", default="test", help="the repositories of this part (train or test)")
    parser.add_argument("--repos", help="these repositories instead of a part's")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--upstream", help="an OpenAI-compatible base URL to use instead of starting llama-server")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    repos = args.repos.split(",") if args.repos else repos_in(args.part)
    WORK.mkdir(parents=True, exist_ok=True)
    sink = args.out.open("w") if args.out else None
    if sink is not None:
        sink.write(json.dumps({"command": ["python", *sys.argv], "commit": commit()}) + "\n")
    counts: dict[str, int] = {}
    with tempfile.TemporaryDirectory(dir=WORK) as tmp, model_server(args.upstream) as model:
        client = openai.OpenAI(base_url=model, api_key="local", max_retries=0, timeout=600)
        for repo in repos:
            for seed in range(args.seeds):
                row = sample(client, repo, seed, args.temperature, Path(tmp))
                counts[repo] = counts.get(repo, 0) + bool(row["fixed"])
                shown = "fixed" if row["fixed"] else "gamed" if row["gamed"] else "not fixed"
                print(f"{repo:<10} seed {seed}: {shown}", flush=True)
                if sink is not None:
                    sink.write(json.dumps(row) + "\n")
                    sink.flush()
    for repo in repos:
        print(f"{repo:<10} ({part_of(repo)}) fixed {counts.get(repo, 0)}/{args.seeds}")


if __name__ == "__main__":
    main()
