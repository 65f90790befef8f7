"""Task-level efficacy with real execution: does the proxy get a small local model to fix real bugs?

Small repositories with a real bug and a failing test (`bench/repos/*`, each copied to a fresh
directory per run, under `tiny_agent.WORK`, not the system's temporary directory) are handed to
a small agent that really runs its tools there
(`bench/tiny_agent.py`: OpenHands-style editor + shell, a single-bash mini-swe-agent-style
loop, or SWE-agent 0.x's viewer and editor commands in one bash tool, `--style sweagent`), talking to Qwen2.5-Coder-1.5B on llama.cpp (`scripts/real_model.py`, the cached build).

Starts:  scratch   the task alone
         stuck     a real stuck point: the test failed, two edits that changed nothing, the
                   same failure three times (executed for real in the copy)
Arms:    direct    the model server itself
         alone     the model server itself, the agent reading calls written as JSON text itself
                   (`tiny_agent.calls_in_text`: what an agent can do for this model without a proxy)
         noblock   repair-proxy with its defaults but the block rung off ([reply] block = false)
         proxy     repair-proxy with the repair it had before salvage and the gates
                   ([reply] salvage, action_gate, finish_gate off)
         full      repair-proxy with its defaults (salvage and the gates on)
         acting    the defaults with every pattern acting (most ship in shadow)
         quiet     salvage and the action gate only: nothing said, nothing refused (the corpus's local source)

Per arm it prints: runs solved (at the end, `python -m pytest` green on the repository's own tests
and its hidden checks passing, `tiny_agent.grade`: more cases of the same behaviour, never shown
to the agent), runs gamed (its tests green, its hidden checks failing: a change that made the
test pass, not the code right), turns with a real tool
call, wasted turns (empty, prose, the same call again, a call to no such tool), turns and
completion tokens to the first green, hand-backs; and for the proxy arms, how often the reply
to a request carrying a new instruction of ours was a real call. Then wasted turns by kind, as
the repository shows them (the same failing call again with no file changed since, an edit that
changed no file, the same read of unchanged files, no call, a finish while the tests fail), and
upstream generations in all and per solved run (a gate's retry is a generation). Every run is
also written as one JSON line (`--out`), with the proxy's warnings logged while it went, by event
(`proxy_warnings`: a retry whose reply the server could not read as a call, a schema refused). Each run starts from a fresh copy and a fresh
conversation: the proxy keys a conversation by its history, so runs share no state.

Run: python bench/recovery.py [--part train|test] [--repos calc,slug] [--k 1] [--first-seed 0] [--turns 10]
                              [--arms direct,proxy,full] [--starts scratch,stuck] [--style openhands|bash|sweagent|both]
                              [--fresh] [--out FILE] [--tap DIR] [--transcripts]

Parts: the repositories are in two (`tiny_agent.part_of`): `train`, those the remedies were shaped
on, and `test`, held out (`"part": "test"` in their `stuck.json`, each calibrated by
`bench/calibrate.py`): added before the remedies measured on them changed, never run while
changing them. `--part` picks the default `--repos` (train). `--fresh`: every run on a proxy
started for it (no state of any run before it, no verdict store). `--out`'s first line is the
command and the commit; `bench/pairs.py` skips it.

With `--tap DIR`, each proxy arm reaches the model through its own logging relay (`bench/tap.py`):
`DIR/<arm>.jsonl` holds what the proxy sent and what came back, and each run's record names its
lines (`"tap": [first, last]`, read with `python bench/tap.py show DIR/full.jsonl --first A --last B`).
With `--transcripts`, each record keeps the run's whole transcript (`"transcript"`, with
`run.sent`, the messages each request carried): the `quiet` arm's runs on the test repositories
are the corpus's local source (`bench/corpus/convert.py`, `qwen-tinyagent-local`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tiny_agent import REPOS, WASTE_KINDS, WORK, Run, copy_repo, repos_in, run_agent, start_messages, stuck_start

from proxy.engine.detectors import REGISTRY

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WASTE = ("empty", "prose", "repeat", "malformed")
POLICIES = {
    "proxy": "[reply]\nsalvage = false\naction_gate = false\nfinish_gate = false\n",
    "noblock": "[reply]\nblock = false\n",
    "full": "",
    "acting": "".join(f'[patterns.{pattern.name}]\nmode = "act"\n' for pattern in REGISTRY),
    "quiet": "[repair]\nfailure_model = false\ndone_gate = false\n[reply]\nblock = false\nfinish_gate = false\n"
    + "".join(f'[patterns.{pattern.name}]\nmode = "shadow"\n' for pattern in REGISTRY),
}
"""The policy each proxy arm runs: `proxy` the repair the proxy had before salvage and the
gates; `noblock` the defaults without the block rung (and nothing else: the gates' retries are
the defaults', `tests/unit/test_shadow_gates.py`); `full` the defaults; `acting` the defaults with
every pattern acting (most ship in shadow, where they change nothing); `quiet` the reply side
alone (salvage, and the action gate asking again for a reply with no call) with the request side
silent: every pattern in shadow, no block rung, no finish or done gate, and no failure model, whose
next step the action gate's retry would name (with it, the model's answers to those retries were
the proxy's own steps: the first recording, seed 20, judged so). The model's own course, its calls
made real: the corpus's local source (`bench/corpus/local.py`)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(url: str, deadline: float = 60.0) -> None:
    start = time.monotonic()
    while time.monotonic() - start < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status < 500:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up within {deadline:g}s")


@contextmanager
def model_server(upstream: str | None) -> Iterator[str]:
    """The given base URL, or llama-server with Qwen2.5-Coder from the cached build."""
    if upstream:
        yield upstream
        return
    sys.path.insert(0, str(ROOT / "scripts"))
    import real_model  # noqa: PLC0415 - only when no upstream is given

    model = real_model.cache_dir() / "models" / real_model.QWEN_FILE
    if not real_model.server_binary().exists() or not model.exists():
        raise SystemExit("no cached llama-server build or model: python scripts/real_model.py build && fetch qwen")
    with real_model.serve(model, template=real_model.qwen_template(), prompt_store=False) as server:
        yield server.base_url


def start_tap(upstream: str, out: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A logging relay (`bench/tap.py`) in front of the model server: its process, and the base
    URL to use instead of `upstream`."""
    model, port = urlsplit(upstream), free_port()
    command = [sys.executable, str(HERE / "tap.py"), "serve", "--port", str(port), "--out", str(out)]
    relay = subprocess.Popen([*command, "--upstream", f"{model.scheme}://{model.netloc}"], cwd=ROOT)
    return relay, f"http://127.0.0.1:{port}{model.path}"


@contextmanager
def proxies(upstream: str, workdir: Path, wanted: list[str], tap: Path | None = None) -> Iterator[dict[str, str]]:
    """The proxy arms asked for, each its own process on loopback with its own policy file; with
    `tap`, each arm's requests to the model go through its own logging relay (`bench/tap.py`),
    written to `tap/<arm>.jsonl`."""
    arms = {}
    for name in (n for n in wanted if n in POLICIES):
        arms[name] = ""
        if POLICIES[name]:
            (workdir / f"{name}.toml").write_text(POLICIES[name])
            arms[name] = str(workdir / f"{name}.toml")
    procs, urls, ready = [], {}, []
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPAIR_PROXY_")}
    for name, policy in arms.items():
        via = upstream
        if tap is not None:
            relay, via = start_tap(upstream, tap / f"{name}.jsonl")
            procs.append(relay)
            ready.append(urlsplit(via)._replace(path="/health").geturl())
        port = free_port()
        command = [sys.executable, "-m", "proxy", "serve", "--port", str(port), "--upstream", via]
        extra = {"REPAIR_PROXY_VERDICTS": "", "REPAIR_PROXY_POLICY": policy, "REPAIR_PROXY_LOG_LEVEL": "warning"}
        log = (workdir / f"{name}.log").open("wb")  # its warnings: what each run made it do (`events`)
        procs.append(subprocess.Popen(command, env={**env, **extra}, cwd=ROOT, stdout=log))
        log.close()
        urls[name] = f"http://127.0.0.1:{port}/v1"
        ready.append(f"http://127.0.0.1:{port}/healthz")
    try:
        for url in ready:
            wait_ready(url)
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=20)


def events(log: Path, since: int) -> tuple[dict[str, int], int]:
    """The proxy's warnings logged past `since` (a byte offset), counted by event, and the new offset."""
    if not log.exists():
        return {}, since
    with log.open("rb") as f:
        f.seek(since)
        new = f.read()
    counts: Counter[str] = Counter()
    for line in new.splitlines():
        try:
            counts[str(json.loads(line).get("event"))] += 1
        except (ValueError, AttributeError):
            continue
    return dict(counts), since + len(new)


def exchanged(tap: Path | None, arm: str, since: int) -> tuple[int, int] | None:
    """The lines of the arm's tap file written while the last run went (`bench/tap.py show FILE
    --first A --last B`), or None when the arm is not tapped (no `--tap`, or no proxy: `direct`)."""
    if tap is None or arm not in POLICIES:
        return None
    file = tap / f"{arm}.jsonl"
    if not file.exists():
        return since, since
    with file.open("rb") as f:
        return since, sum(1 for _ in f)


def clear_cache(model: str) -> None:
    """One short request straight to the model server, so a run's first prompt shares next to nothing
    with what the server's prompt cache holds. Llama.cpp reuses the cached prefix of the last prompt;
    its numbers, computed in other batches (generated a token at a time, or read in another run's
    chunks), differ in the last bits from a fresh read, and the sampler's draw with them: in the
    twenty-sixth run, quota seed 1's arms got equal requests and one answered `finish`, the other
    nothing, the second arm's run having started on the first's cached prompt. That alone was not
    enough: llama.cpp also keeps past prompts in host memory and restored the first arm's whole
    first prompt for the second (its log: all 1,718 tokens found, the last computed again alone;
    twenty-eighth run, quota seed 1 parted by the sampler again). The bench's server keeps none
    (`real_model.serve(prompt_store=False)`); this request then leaves its one slot holding nothing
    of a run's prompts, and each arm's run reads them in the same chunks."""
    body = json.dumps({"messages": [{"role": "user", "content": "."}], "max_tokens": 1, "temperature": 0})
    request = urllib.request.Request(
        f"{model.rstrip('/')}/chat/completions", body.encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        response.read()


def one_run(
    base_url: str, repo: str, style: str, start: str, seed: int, turns: int, workdir: Path, salvage: bool = False
) -> tuple[Run, list[dict[str, Any]]]:
    """The run and its transcript (the messages of its last request, and the reply to it)."""
    # One path for every arm's run of a seed (the last one's copy removed first): the path is in
    # the prompt, and a nonce in it made the arms' prompts differ where the proxy said the same
    # (quota seed 2, twenty-fifth run: the same held edit asked for word for word, answered two
    # ways), so a difference between arms came from the sampler as much as from the proxy.
    parent = workdir / f"{repo}-{style}-{start}-{seed}"
    shutil.rmtree(parent, ignore_errors=True)
    root = copy_repo(repo, parent)
    edits = json.loads((REPOS / repo / "stuck.json").read_text())["edits"]
    messages = start_messages(root, style) if start == "scratch" else stuck_start(root, style, edits)
    return run_agent(base_url, root, style, messages, max_turns=turns, seed=seed, salvage=salvage), messages


def commit() -> str:
    """The commit the bench runs at (a record says which code it measured)."""
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False)
    dirty = subprocess.run(["git", "status", "--porcelain", "proxy"], cwd=ROOT, capture_output=True, text=True, check=False)  # fmt: skip
    return done.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    turns = [t for r in runs for t in r["run"]["turns"]]
    greens = [r for r in runs if r["first_green"]]
    instructed = [t for t in turns if t["trips"]]
    return {
        "runs": len(runs),
        "solved": sum(r["run"]["solved"] for r in runs),
        "gamed": sum(bool(r["run"]["tests"]) and r["run"]["hidden"] is False for r in runs),
        "turns": len(turns),
        "acting": sum(t["kind"] in ("call", "repeat") for t in turns),
        **{w: sum(t["kind"] == w for t in turns) for w in WASTE},
        "salvaged": sum(t["salvaged"] for t in turns),
        "to_green_turns": sum(r["first_green"] for r in greens) / len(greens) if greens else None,
        "to_green_tokens": sum(r["tokens_to_green"] for r in greens) / len(greens) if greens else None,
        "handed_back": sum(r["run"]["end"] == "handed_back" for r in runs),
        "instructed": len(instructed),
        "instructed_acting": sum(t["kind"] in ("call", "repeat") for t in instructed),
        "wasted": {kind: sum(t.get("waste") == kind for t in turns) for kind in WASTE_KINDS},
        "generations": sum(t.get("generations", 1) for t in turns),
    }


def waste_table(rows: dict[str, dict[str, Any]]) -> str:
    """Wasted turns by kind (judged by what happened in the repository), and generations spent."""
    lines = [
        f"{'arm':<16} {'wasted':>9} " + " ".join(f"{k:>14}" for k in WASTE_KINDS) + f" {'gens':>6} {'gens/solved':>12}"
    ]
    for arm, s in rows.items():
        wasted = sum(s["wasted"].values())
        per = f"{s['generations'] / s['solved']:.1f}" if s["solved"] else "-"
        lines.append(
            f"{arm:<16} {wasted:>4}/{s['turns']:<4} " + " ".join(f"{s['wasted'][k]:>14}" for k in WASTE_KINDS)
            + f" {s['generations']:>6} {per:>12}"
        )  # fmt: skip
    return "\n".join(lines)


def table(rows: dict[str, dict[str, Any]]) -> str:
    head = (
        f"{'arm':<16} {'solved':>7} {'gamed':>6} {'acting turns':>13} {'empty':>6} {'prose':>6} {'repeat':>7} {'malformed':>10} "
        f"{'salvaged':>9} {'turns→green':>12} {'tokens→green':>13} {'handed back':>12} {'acts after ours':>16}"
    )
    lines = [head]
    for arm, s in rows.items():
        green_turns = f"{s['to_green_turns']:.1f}" if s["to_green_turns"] is not None else "-"
        green_tokens = f"{s['to_green_tokens']:.0f}" if s["to_green_tokens"] is not None else "-"
        after = f"{s['instructed_acting']}/{s['instructed']}" if s["instructed"] else "-"
        lines.append(
            f"{arm:<16} {s['solved']:>3}/{s['runs']:<3} {s['gamed']:>6} {s['acting']:>5}/{s['turns']:<3} {s['acting'] / max(s['turns'], 1):>4.0%}"
            f" {s['empty']:>6} {s['prose']:>6} {s['repeat']:>7} {s['malformed']:>10} {s['salvaged']:>9} {green_turns:>12}"
            f" {green_tokens:>13} {s['handed_back']:>12} {after:>16}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", default="train", choices=["train", "test"], help="the repositories by default")
    parser.add_argument("--repos", help="these repositories (default: every one of --part)")
    parser.add_argument("--fresh", action="store_true", help="every run on a proxy started for it")
    parser.add_argument("--k", type=int, default=1, help="samples per repo, start and arm (seeds first..first+k-1)")
    parser.add_argument("--first-seed", type=int, default=0, help="the first sampling seed (a rerun with other seeds)")
    parser.add_argument("--turns", type=int, default=10, help="model replies per run at most")
    parser.add_argument("--arms", default="direct,proxy,full")
    parser.add_argument("--starts", default="stuck,scratch")
    parser.add_argument("--style", default="both", choices=["openhands", "bash", "sweagent", "both"])
    parser.add_argument("--upstream", help="an OpenAI-compatible base URL to use instead of starting llama-server")
    parser.add_argument("--out", type=Path, help="one JSON line per run")
    parser.add_argument(
        "--tap", type=Path, help="a folder for each proxy arm's exchanges with the model (bench/tap.py)"
    )
    parser.add_argument(
        "--transcripts",
        action="store_true",
        help="keep each run's whole transcript in its --out record (replayable: bench/corpus/convert.py)",
    )
    args = parser.parse_args()
    # Stopped with SIGTERM, leave no model server or proxy behind: unwind as on Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    repos = args.repos.split(",") if args.repos else repos_in(args.part)
    styles = {"both": ("openhands", "bash")}.get(args.style, (args.style,))
    arms, starts = args.arms.split(","), args.starts.split(",")
    started = time.monotonic()
    records: list[dict[str, Any]] = []
    out = args.out.open("w") if args.out else nullcontext()
    WORK.mkdir(parents=True, exist_ok=True)
    if args.tap:
        args.tap.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(dir=WORK) as tmp,
        model_server(args.upstream) as model,
        proxies(model, Path(tmp), [] if args.fresh else arms, args.tap) as urls,
        out as sink,
    ):
        if sink is not None:
            sink.write(json.dumps({"command": ["python", *sys.argv], "commit": commit()}) + "\n")
        urls["direct"] = urls["alone"] = model
        logged, tapped = dict.fromkeys(arms, 0), dict.fromkeys(arms, 0)
        for seed in range(args.first_seed, args.first_seed + args.k):
            for index, repo in enumerate(repos):
                style = styles[index % len(styles)]
                for start in starts:
                    for arm in arms:
                        new = args.fresh and arm in POLICIES
                        fresh = proxies(model, Path(tmp), [arm], args.tap) if new else nullcontext(urls)
                        with fresh as serving:
                            logged[arm] = 0 if new else logged[arm]  # a fresh proxy's log starts anew
                            salvage = arm == "alone"
                            clear_cache(model)
                            run, transcript = one_run(
                                serving[arm], repo, style, start, seed, args.turns, Path(tmp), salvage
                            )
                        warned, logged[arm] = events(Path(tmp) / f"{arm}.log", logged[arm])
                        exchanges = exchanged(args.tap, arm, tapped[arm])
                        tapped[arm] = exchanges[1] if exchanges else 0
                        green = run.first_green
                        record = {
                            "arm": arm, "start": start, "repo": repo, "style": style, "seed": seed,
                            "run": asdict(run), "first_green": green, "proxy_warnings": warned, "tap": exchanges,
                            "tokens_to_green": sum(t.completion_tokens for t in run.turns[: green or 0]),
                        }  # fmt: skip
                        if args.transcripts:
                            record["transcript"] = transcript
                        records.append(record)
                        if sink is not None:
                            sink.write(json.dumps(record) + "\n")
                            sink.flush()  # a run stopped part way keeps every run it finished
                        kinds = "".join(t.kind[0] if not t.waste else t.waste[0].upper() for t in run.turns)
                        print(
                            f"{time.monotonic() - started:6.0f}s {arm:<6} {start:<7} {repo:<6} {style:<9} seed {seed}: "
                            f"{'SOLVED' if run.solved else 'GAMED' if run.gamed else 'not solved':<10} end={run.end:<11} turns={kinds}",
                            flush=True,
                        )
    print(f"\n{len(records)} runs in {time.monotonic() - started:.0f}s; Qwen2.5-Coder-1.5B Q4_K_M, temperature 0.7")
    for start in starts:
        print(f"\nstart: {start}")
        rows = {arm: summary([r for r in records if r["arm"] == arm and r["start"] == start]) for arm in arms}
        print(table(rows) + "\n\n" + waste_table(rows))
    print("\nall starts")
    rows = {arm: summary([r for r in records if r["arm"] == arm]) for arm in arms}
    print(table(rows) + "\n\n" + waste_table(rows))


if __name__ == "__main__":
    main()
