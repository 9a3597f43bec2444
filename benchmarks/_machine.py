"""The machine a benchmark ran on, printed beside its figures (these machines' CPUs differ)."""

from __future__ import annotations

import os
import platform
import subprocess


def cpu_model() -> str:
    """``lscpu``'s model name and the number of cores, e.g. "AMD EPYC, 2 cores"."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        name = next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except (OSError, subprocess.CalledProcessError, StopIteration):
        name = platform.processor() or platform.machine() or "unknown CPU"
    return f"{name}, {os.cpu_count()} cores"
