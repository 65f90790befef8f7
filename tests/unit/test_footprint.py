"""`Footprint`: each analysed body's working memory is charged against the byte bound, and the
two caches shrink to what is left, so the process stays within idle plus the bound."""

from __future__ import annotations

import contextlib
from pathlib import Path

from chat import Chat, test_run

from proxy.dialects import CHAT, plan_offline
from proxy.dialects.prefix import CHARGE
from proxy.dialects.spans import PARSES_SHARE
from proxy.engine.core import Engine
from proxy.engine.text.tokens import TOKENIZER_BYTES
from proxy.http.runtime.footprint import (
    HELD_FACTOR,
    MAX_WORKING_SHARE,
    WORKING_FACTOR,
    WORKING_WINDOW,
    Footprint,
    Shares,
)
from proxy.http.runtime.tenancy import Shared
from proxy.settings.config import load_settings
from proxy.settings.policy import default_policy

BOUND = 64 << 20
MB = 1 << 20


def shared(tmp_path: Path, bound: int = BOUND) -> Shared:
    path = tmp_path / "bound.toml"
    path.write_text(f"[store]\nstate_cache_bytes = {bound}\n")
    return Shared.of(load_settings(path))


def caches(s: Shared) -> tuple[int, int]:
    states, spans = s.cache.max_bytes, s.spans.max_bytes
    assert states is not None and spans is not None
    return states, spans


def test_an_analysed_body_is_charged_its_working_memory_and_the_caches_shrink(tmp_path: Path) -> None:
    s = shared(tmp_path)
    with s.footprint.analysing(MB):
        states, spans = caches(s)
    assert s.footprint.working == WORKING_FACTOR * MB
    assert TOKENIZER_BYTES + s.footprint.working + states + spans == BOUND
    assert states == 3 * spans


def test_bodies_analysed_at_once_add_up(tmp_path: Path) -> None:
    s = shared(tmp_path)
    with s.footprint.analysing(MB // 2), s.footprint.analysing(MB // 4):
        assert s.footprint.working == WORKING_FACTOR * (MB // 2 + MB // 4)
    assert TOKENIZER_BYTES + s.footprint.working + sum(caches(s)) == BOUND


def test_not_charged_again_for_a_body_no_larger_than_the_most_analysed_at_once(tmp_path: Path) -> None:
    s = shared(tmp_path)
    with s.footprint.analysing(MB):
        pass
    before = caches(s)
    for size in (MB // 2, MB, MB // 4):  # one after another: they never add up
        with s.footprint.analysing(size):
            pass
    assert s.footprint.working == WORKING_FACTOR * MB
    assert caches(s) == before


def test_a_transcript_held_parsed_is_charged_its_parse_not_the_working_memory_of_parsing_it(tmp_path: Path) -> None:
    """Catch-ups queued (a worker holds up to eight transcripts parsed): charged as analyses, eight
    760 KB transcripts took 119 MB of the default bound and the last parses' share fell below what
    thirty conversations of that size need, so every one of their bodies was parsed whole."""
    size = 760 * 1024
    s = shared(tmp_path, bound=256 << 20)
    with s.footprint.analysing(size), contextlib.ExitStack() as held:  # the request that queued the last
        for _ in range(8):
            held.enter_context(s.footprint.holding(size))
        assert s.footprint.working == WORKING_FACTOR * size + int(HELD_FACTOR * size) * 8
    assert s.spans.max_bytes is not None
    assert PARSES_SHARE * s.spans.max_bytes > 30 * CHARGE * size  # room for thirty conversations' last parses
    as_analyses = shared(tmp_path, bound=256 << 20)
    with contextlib.ExitStack() as held:
        for _ in range(9):
            held.enter_context(as_analyses.footprint.analysing(size))
    assert as_analyses.spans.max_bytes is not None
    assert PARSES_SHARE * as_analyses.spans.max_bytes < 30 * CHARGE * size


def test_a_held_transcript_is_no_analysis_in_the_window_that_brings_the_charge_down(tmp_path: Path) -> None:
    footprint, _calls, _s = released(tmp_path)
    analyse(footprint, MB)
    for _ in range(WORKING_WINDOW + 1):
        with footprint.holding(1024):
            pass
    assert footprint.working == WORKING_FACTOR * MB  # no window has passed: nothing was analysed


def test_working_memory_takes_at_most_its_share_of_what_the_tokenizer_leaves(tmp_path: Path) -> None:
    s = shared(tmp_path)
    with s.footprint.analysing(64 * MB):  # a body at the default body limit
        pass
    rest = BOUND - TOKENIZER_BYTES
    assert s.footprint.working == int(rest * MAX_WORKING_SHARE)
    assert sum(caches(s)) == rest - s.footprint.working
    assert Shares.of(BOUND, working=0) == Shares(0, *caches(shared(tmp_path)))


def released(tmp_path: Path) -> tuple[Footprint, list[int], Shared]:
    """A footprint on real caches whose `release` calls are counted."""
    calls: list[int] = []
    s = shared(tmp_path)
    return Footprint(BOUND, s.cache, s.spans, release=lambda: calls.append(1)), calls, s


def analyse(footprint: Footprint, *sizes: int) -> None:
    for size in sizes:
        with footprint.analysing(size):
            pass


def test_a_window_without_bodies_near_the_peak_brings_the_charge_down_and_releases_memory(tmp_path: Path) -> None:
    footprint, calls, s = released(tmp_path)
    analyse(footprint, MB, *[1024] * (WORKING_WINDOW - 1))  # the window the large body is in
    assert footprint.working == WORKING_FACTOR * MB and not calls
    analyse(footprint, *[1024] * WORKING_WINDOW)
    assert footprint.working == WORKING_FACTOR * 1024
    assert calls == [1]
    assert TOKENIZER_BYTES + footprint.working + sum(caches(s)) == BOUND  # the caches have the room back


def test_not_while_a_large_body_comes_back_in_every_window(tmp_path: Path) -> None:
    footprint, calls, _s = released(tmp_path)
    for _ in range(5):
        analyse(footprint, MB, *[1024] * (WORKING_WINDOW - 1))
    assert footprint.working == WORKING_FACTOR * MB
    assert not calls


def test_states_past_the_shrunk_bound_are_dropped_least_recently_used_first(tmp_path: Path) -> None:
    s = shared(tmp_path, bound=40 << 20)  # 12 MiB past the tokenizer: 9 for states
    chat = Chat()
    for _ in range(100):
        chat.turn(test_run("@pytest_addition_a"))
    body = chat.bytes()
    planned = plan_offline(Engine.of(default_policy()), CHAT, body, {"X-Repair-Conversation": "c"})
    assert planned is not None
    n = 0
    while len(s.cache) == n:  # fill the states' share until the first is dropped
        s.cache.put(("default", f"c{n}"), planned.decision.state)
        n += 1
    held, states_bound = len(s.cache), caches(s)[0]
    with s.footprint.analysing(len(body) * 8):  # charges more than a third of the states' share
        pass
    assert s.cache.bytes <= caches(s)[0] < states_bound
    assert len(s.cache) < held
    newest = [key for key, _state in s.cache.items()]
    assert newest == [("default", f"c{k}") for k in range(n - 1, n - 1 - len(newest), -1)]
