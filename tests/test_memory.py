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


REUSED = """
import resource
import sys
from advisor import memory

memory.release_freed_memory()              # as the command line does, before numpy is imported
import numpy as np

getattr(memory, sys.argv[1])()
kept = []
for step in range(21):
    if step == 1:   # the first array's pages are new either way
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    column = np.ones(2**20)                # an 8 MiB column array, touched
    kept.append(np.ones(1000))             # what the step keeps: a small result made after it
    del column
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""
PAGES_PER_ARRAY = 2**23 // 4096


@pytest.mark.parametrize("phase", ["reading_phase", "analysis_phase"])
def test_column_arrays_freed_in_the_analysis_serve_the_next_without_page_faults(phase):
    out = subprocess.run([sys.executable, "-c", REUSED, phase], capture_output=True, text=True, check=True).stdout
    faults = int(out)
    if phase == "reading_phase":   # each array mapped on its own, its pages faulted in again
        assert faults > 15 * PAGES_PER_ARRAY
    else:                          # from the heap, where the freed array's pages are still resident
        assert faults < 2 * PAGES_PER_ARRAY


def test_the_phases_move_nothing_unless_the_command_line_fixed_the_threshold(monkeypatch):
    calls = []
    monkeypatch.setattr(memory, "mallopt", lambda parameter, value: calls.append(value) or True)
    monkeypatch.setattr(memory, "_fixed", False)
    memory.reading_phase()
    memory.analysis_phase()
    assert calls == []
    monkeypatch.setattr(memory, "_fixed", True)
    memory.reading_phase()
    memory.analysis_phase()
    assert calls == [memory.MMAP_THRESHOLD_BYTES, memory.ANALYSIS_MMAP_THRESHOLD_BYTES]


def test_a_run_reads_in_the_reading_phase_and_analyses_in_the_other(monkeypatch, tmp_path):
    from pathlib import Path

    from advisor import pipeline

    phases = []
    monkeypatch.setattr(pipeline, "reading_phase", lambda: phases.append("reading"))
    monkeypatch.setattr(pipeline, "analysis_phase", lambda: phases.append("analysis"))
    read = pipeline.read_comparison
    monkeypatch.setattr(pipeline, "read_comparison", lambda *a, **k: (phases.append("read"), read(*a, **k))[1])
    example = Path(__file__).resolve().parents[1] / "examples" / "crepe_tiny_bn_fold" / "result_20240506043136.csv"
    pipeline.analyse(pipeline.AnalysisOptions(comparison=example))
    assert phases == ["reading", "read", "analysis"]
