"""``frozen_heap`` keeps the objects alive at a run's start out of the collector's passes for the run only;
``keep_freed_heap`` has glibc keep freed heap blocks for reuse."""

from __future__ import annotations

import gc
import platform
import subprocess
import sys

import pytest

from magnetar.cli.perf.runner import frozen_heap


def test_the_heap_is_frozen_for_the_block_and_handed_back_after() -> None:
    gc.unfreeze()
    kept = [object() for _ in range(10)]  # a tracked container alive before the block
    with frozen_heap():
        assert gc.get_freeze_count() > 0
        assert not any(x is kept for x in gc.get_objects())  # frozen: in no generation the collector walks
        made = [object()]  # made inside the block: collected as usual
        assert any(x is made for x in gc.get_objects())
    assert gc.get_freeze_count() == 0
    assert any(x is kept for x in gc.get_objects())


def test_the_heap_is_handed_back_when_the_run_fails() -> None:
    gc.unfreeze()
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("the run failed")
    assert gc.get_freeze_count() == 0


#: a consumer's pattern: reads of several sizes (up to uvloop's 256,000 bytes) kept a while, freed
#: oldest first; minor page faults per read, printed by the child process
_READS = """
import collections, random, resource, sys
from magnetar.cli.perf.runner import keep_freed_heap
kept = keep_freed_heap() if sys.argv[1] == "keep" else None
rng, reads, source = random.Random(1), collections.deque(), bytes(300_000)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5000):
    reads.append(source[: rng.choice([256_000, 200_000, 131_172, 65_536])] + b"")
    while len(reads) > 6:
        reads.popleft()
print(kept, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5000)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")
def test_keep_freed_heap_stops_the_page_faults_of_reads_kept_a_while() -> None:
    def faults(mode: str) -> tuple[str, float]:
        out = subprocess.run([sys.executable, "-c", _READS, mode], capture_output=True, text=True, check=True)
        kept, per_read = out.stdout.split()
        return kept, float(per_read)

    kept, tuned = faults("keep")
    _, default = faults("default")
    assert kept == "True"
    assert tuned < 0.5 < default  # 6.9 minor faults a read with glibc's defaults on the machine of §41
