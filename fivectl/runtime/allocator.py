"""Keep freed tensor memory in the process instead of returning it to the OS after every step.

glibc serves allocations above its mmap threshold (128 kB to 32 MB) with fresh ``mmap`` pages and unmaps them
on free, and trims the heap top above its trim threshold. A learner step allocates and frees the same
megabyte-sized activations and gradients every time, so each step page-faulted them all in again (thousands of
minor faults a step, measured in benchmarks/RESULTS.md). Raising both thresholds makes glibc reuse the freed
blocks; the process keeps its peak working set, which it needs on the next step anyway.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD = -1  # mallopt parameters, from glibc's <malloc.h>
M_MMAP_THRESHOLD = -3

KEEP_BYTES = 1 << 30
"""Blocks up to this size come from the heap, and this much free memory at its top stays in the process."""


def keep_freed_memory(keep_bytes: int = KEEP_BYTES) -> bool:
    """Tell glibc's malloc to reuse freed memory (see the module docstring). Returns whether it applied: False
    on other platforms or C libraries (musl, macOS, Windows), where it does nothing."""
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # no glibc-style mallopt in this C library
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    keep = min(int(keep_bytes), 2**31 - 1)
    return bool(mallopt(M_MMAP_THRESHOLD, keep)) and bool(mallopt(M_TRIM_THRESHOLD, keep))
