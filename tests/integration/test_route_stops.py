"""The route check (issue 53's bound, in the suite since issue 64): a chat request, non-streamed and
streamed, enters at most `STOPS` distinct functions in at most `FILES` modules of the proxy outside
the engine, from the moment the client sends it until its last byte is read. Measured as
`bench/route_stops.py` measures it (its `measure()`, in process): a real proxy on 127.0.0.1 in front
of a loopback upstream answering with a tool call, a warm-up request of each kind first, the second
traced with `sys.setprofile`."""

from __future__ import annotations

import sys
from pathlib import Path

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import route_stops

STOPS, FILES = 80, 26
"""The bound (`route_stops.py --check 80 26`)."""


def _outside_engine(filename: str) -> bool:
    return not filename.startswith(route_stops.ENGINE)


async def test_a_chat_requests_route_outside_the_engine_stays_within_the_bound() -> None:
    logging = structlog.get_config()  # the bench configures the proxy's logs to write nowhere
    try:
        routes = await route_stops.measure()
    finally:
        structlog.configure(**logging)
    assert set(routes) == {"non-streamed", "streamed"}
    over = {}
    for name, route in routes.items():
        stops, files, _returns = route.counted(_outside_engine)
        if stops > STOPS or files > FILES:
            entered = [
                f"{f.removeprefix(route_stops.PACKAGE)}:{q}" for f, _line, q in route.stops if _outside_engine(f)
            ]
            over[name] = (stops, files, entered)
    assert not over, "\n".join(
        f"{name}: {stops} stops (at most {STOPS}), {files} files (at most {FILES}):\n  " + "\n  ".join(entered)
        for name, (stops, files, entered) in over.items()
    )
