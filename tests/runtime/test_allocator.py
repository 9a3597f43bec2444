"""The learner's and workers' allocator setting (``fivectl.runtime.allocator``)."""

from __future__ import annotations

import subprocess
import sys

from fivectl.runtime.allocator import keep_freed_memory

# glibc's mallopt answers 1 when it takes a setting and 0 when it refuses one; the function reports both.
APPLY_IN_A_FRESH_PROCESS = """
from fivectl.runtime.allocator import keep_freed_memory
print(keep_freed_memory(), keep_freed_memory(keep_bytes=1 << 20))
"""


def test_glibc_takes_both_settings_on_linux():
    # This machine's C library is glibc; elsewhere the function returns False and changes nothing.
    assert keep_freed_memory() is (sys.platform == "linux")


def test_a_fresh_process_can_apply_it_more_than_once_with_any_size():
    out = subprocess.run(
        [sys.executable, "-c", APPLY_IN_A_FRESH_PROCESS], capture_output=True, text=True, check=True
    )
    expected = str(sys.platform == "linux")
    assert out.stdout.split() == [expected, expected]
