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


_RELEASE = """
import sys
from proxy.cli.serving import release_free_memory

def rss_mb():
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith("VmRSS")) / 1024

chunks = [bytearray(10_000) for _ in range(10_000)]  # 100 MB from the heap, under the mmap threshold
sentinel = bytearray(10_000)  # above them: the heap's top cannot shrink by itself
del chunks
before = rss_mb()
if sys.argv[1] == "release":
    assert release_free_memory()
print(before - rss_mb())
"""


def _given_back_mb(mode: str) -> float:
    return float(fresh_interpreter(_RELEASE, mode).stdout.split()[-1])


def test_released_the_memory_freed_below_the_heaps_top_goes_back_to_the_system() -> None:
    assert _given_back_mb("release") > 80


def test_not_released_the_freed_memory_stays_with_the_process() -> None:
    assert _given_back_mb("keep") < 5


_FAULTS = """
import resource, sys
from proxy.cli.serving import keep_freed_memory

if sys.argv[1] == "kept":
    assert keep_freed_memory()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
before = faults()
for _ in range(50):
    body = b"".join([bytes(400_000), bytes(400_000)])  # a request body joined from its chunks
    sent = b"".join([b"headers", body])  # and joined again to be sent
    del body, sent
print(faults() - before)
"""


def _page_faults(mode: str) -> int:
    return int(fresh_interpreter(_FAULTS, mode).stdout.split()[-1])


def test_memory_kept_a_requests_body_and_its_copies_fault_in_once() -> None:
    assert _page_faults("kept") < 1000  # the first request's 1.6 MB: about 400 pages


def test_not_kept_every_request_faults_its_body_in_again() -> None:
    assert _page_faults("plain") > 10_000  # about 400 pages, 50 times
