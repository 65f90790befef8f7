"""Does a client's next request repeat its last one byte for byte, up to what the last one carried? (issue 64)

A proxy could then read only what a request adds without parsing the rest: the bytes of the transcript it has
read already (the body up to the end of the last request's last message) digested, and only the messages after
them parsed. That holds for a client only if every request's body starts with the previous request's body up to
the end of its transcript array (`messages`, or `input` for the Responses API): the same members before it, in the
same order and spacing, and every earlier message written again the same way.

Each client of the client matrix (tests/matrix, the clients scripts/clients.py installed) is run stuck, as
tests/matrix/test_clients.py runs it (a scripted model that has it run the failing check again and again, the real
proxy in front of it, handing the run back at the third failure), and each request it sent (as the tap in front of
the proxy recorded it) is compared with the one before it on the same path. Printed per client: the requests, the
pairs, the bodies `dialects.prefix.ParseMemory` read from the last parse (each checked equal to the body's whole
parse), the pairs whose prefix holds, and for each that does not where the bytes first differ: in a member before
the transcript, or in message k of n (counted from the end: which of the last request's messages it rewrote).

Run: python bench/prefix_bytes.py [--clients a,b]   (about a minute per client; a client not installed is skipped)
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import sys
import tempfile
from collections import Counter
from pathlib import Path

import structlog

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "matrix"), str(ROOT / "scripts")]

from harness import Model, Tap, drive, driver, workdir  # noqa: E402
from support import policy_toml, start_proxy  # noqa: E402
from test_clients import DRIVEN, STUCK_POLICY, program_of  # noqa: E402

from proxy.dialects import ROUTES, parse  # noqa: E402
from proxy.dialects.prefix import ParseMemory  # noqa: E402
from proxy.dialects.splice import SpliceError, _members  # noqa: E402

TRANSCRIPTS = ("messages", "input")


def transcript_spans(body: bytes) -> tuple[str, int, list[tuple[int, int]]] | None:
    """The transcript member's key, where its value starts, and each element's (start, end), in the decoded
    text's offsets; None when the body has none."""
    try:
        text = body.decode("utf-8")
        members = _members(text)
    except (UnicodeDecodeError, SpliceError):
        return None
    for member in members:
        if member.key in TRANSCRIPTS and member.elements is not None:
            return member.key, member.value_start, [(start, end) for start, end, _value in member.elements]
    return None


def where_it_breaks(before: bytes, after: bytes) -> str:
    """'holds', or where `after` first departs from `before`'s text up to the end of its transcript."""
    found = transcript_spans(before)
    if found is None:
        return "no transcript"
    key, value_start, spans = found
    old, new = before.decode("utf-8"), after.decode("utf-8")
    end = spans[-1][1] if spans else value_start + 1
    if new[:end] == old[:end]:
        return "holds" if new.endswith(old[end:]) else "the members after the transcript changed"
    first = next(i for i, (a, b) in enumerate(zip(old[:end], new[:end], strict=False)) if a != b) if new else 0
    if first < value_start:
        return f"before {key}"
    index = next((i for i, (_s, e) in enumerate(spans) if first < e), len(spans) - 1)
    return f"{key}[{index}] of {len(spans)} (last - {len(spans) - 1 - index})"


async def one_client(client: str, tmp: Path) -> tuple[int, Counter[str]] | str:
    """The client's requests and how each pair went; or why it was skipped."""
    environment, name, preset = DRIVEN[client]
    try:
        interpreter, program = program_of(environment)
    except BaseException as skipped:  # pytest.skip: not installed here
        return f"skipped ({skipped})"
    model = Model()
    model_url = await model.start()
    policy = tmp / f"{client}.toml"
    policy.write_text((f'extends = "{preset}"\n' if preset else "") + policy_toml(STUCK_POLICY))
    proxy = await start_proxy(model_url, None, str(policy))
    tap = Tap(str(proxy.make_url("")))
    base = await tap.start()
    try:
        name, *extra = name.split()
        await drive([interpreter, driver(name), base, "stuck", *extra, *program], workdir(tmp / client), {})
    except AssertionError as failed:
        return f"failed to run ({str(failed).splitlines()[0]})"
    finally:
        for server in (tap.server, model.server, proxy):
            if server is not None:
                await server.close()
    posts = [r for r in tap.seen if r.body]
    pairs: Counter[str] = Counter()
    for before, after in itertools.pairwise(posts):
        if before.path == after.path:
            pairs[where_it_breaks(before.body, after.body)] += 1
    memory = ParseMemory(1 << 30, min_bytes=0)  # every body, however small
    for post in posts:
        dialect = ROUTES.get(post.path.rstrip("/"))
        if dialect is None:
            continue
        read, whole = parse(dialect, post.body, memory), parse(dialect, post.body)
        if read is not None and whole is not None and read.data != whole.data:
            raise AssertionError(f"{client}: a body read from the last parse is not its own JSON")
    pairs["read from the last parse"] = memory.hits
    return len(posts), pairs


async def main(clients: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="prefix-bytes-") as folder:
        for client in clients:
            (Path(folder) / client).mkdir()
            result = await one_client(client, Path(folder))
            if isinstance(result, str):
                print(f"{client:<26} {result}", flush=True)
                continue
            posts, pairs = result
            held, read = pairs.pop("holds", 0), pairs.pop("read from the last parse", 0)
            broken = ", ".join(f"{where} x{count}" for where, count in pairs.items())
            print(
                f"{client:<26} requests {posts:>3}  pairs {sum(pairs.values()) + held:>3}  prefix holds {held:>3}"
                f"  read from the last parse {read:>3}  {broken}"
            )


def run() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))  # the table only
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", help=f"comma-separated, among: {', '.join(sorted(DRIVEN))}")
    args = parser.parse_args()
    clients = args.clients.split(",") if args.clients else sorted(DRIVEN)
    unknown = [c for c in clients if c not in DRIVEN]
    if unknown:
        parser.error(f"unknown clients: {', '.join(unknown)}")
    asyncio.run(main(clients))


if __name__ == "__main__":
    run()
