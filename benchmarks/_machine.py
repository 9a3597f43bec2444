"""The machine a benchmark ran on, printed beside its figures (these machines' CPUs differ)."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path


def cpu_model() -> str:
    """``lscpu``'s model name, the cores and the widest vector units, e.g. "AMD EPYC, 2 cores, AVX2".

    The model name alone does not tell an AVX2-only EPYC from an AVX-512 one, and torch's kernels differ between
    them (bfloat16 matrix products above all), so the instruction sets are named too.
    """
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        name = next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except (OSError, subprocess.CalledProcessError, StopIteration):
        name = platform.processor() or platform.machine() or "unknown CPU"
    return f"{name}, {os.cpu_count()} cores, {vector_units()}"


def vector_units() -> str:
    """The widest vector instructions in ``/proc/cpuinfo``: "AMX", "AVX-512 (bf16)", "AVX-512", "AVX2" or "?"."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "?"
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    if "amx_tile" in flags:
        return "AMX"
    if "avx512f" in flags:
        return "AVX-512 (bf16)" if "avx512_bf16" in flags else "AVX-512"
    return "AVX2" if "avx2" in flags else "?"
