"""`one_malloc_arena`: a thread's allocations come from glibc's main arena, so memory freed
after a large body analysed in a worker thread is not kept apart in an arena of its own.

Each case runs in a fresh interpreter (arenas are process state) and asks glibc which arenas
it has (`malloc_stats`). The untuned case is the must-not side: it shows a thread does get an
arena of its own when nothing is tuned, so the tuned case cannot pass by observing nothing."""

from __future__ import annotations

import platform

import pytest
from support import fresh_interpreter

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="tunes glibc's malloc")

_SCRIPT = """
import ctypes, sys, threading
from proxy.cli.serving import one_malloc_arena

if sys.argv[1] == "tuned":
    assert one_malloc_arena()
kept = []
def work():
    kept.extend(bytearray(10_000) for _ in range(200))  # under the mmap threshold: from an arena
thread = threading.Thread(target=work)
thread.start()
thread.join()
ctypes.CDLL(None).malloc_stats()  # per arena, to stderr
"""


def _arenas(mode: str) -> int:
    return fresh_interpreter(_SCRIPT, mode).stderr.count("Arena ")


def test_a_threads_allocations_come_from_the_main_arena_once_tuned() -> None:
    assert _arenas("tuned") == 1


def test_not_tuned_a_thread_allocates_from_an_arena_of_its_own() -> None:
    assert _arenas("plain") >= 2
