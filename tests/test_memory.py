"""advisor.memory: glibc's allocator told how advisor uses memory. The behaviour that matters is the
resident memory of the process, so it is what these tests look at (in a fresh process each)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from advisor import memory

pytestmark = pytest.mark.skipif(memory._libc() is None, reason="glibc's allocator only (Linux)")

FRAGMENTED = """
import sys
from advisor import memory

def rss_mib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20

memory.release_freed_memory()   # as the command line does: blocks under 4 MiB come from the heap
blocks = [bytearray(64 * 1024) for _ in range(4000)]   # 250 MiB of heap blocks, touched
kept = blocks[::20]                                    # one in twenty survives: the heap cannot shrink
del blocks
before = rss_mib()
if sys.argv[1] == "give-back":
    memory.give_back_free_heap()
print(before, rss_mib())
"""


@pytest.mark.parametrize("give_back", [False, True])
def test_free_pages_inside_the_heap_go_back_to_the_system_only_when_given_back(give_back):
    out = subprocess.run([sys.executable, "-c", FRAGMENTED, "give-back" if give_back else "keep"],
                         capture_output=True, text=True, check=True).stdout
    before, after = map(float, out.split())
    assert before > 200   # the freed blocks are still resident: glibc keeps the heap's free pages
    if give_back:
        assert after < before - 150
    else:
        assert after > before - 20


def test_mallopt_reaches_glibc():
    assert memory.mallopt(memory.M_MMAP_THRESHOLD, memory.MMAP_THRESHOLD_BYTES) is True
