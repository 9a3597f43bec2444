"""Shared by the benchmarks: train a recipe for some wall-clock minutes through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def train_for(recipe: Path, run_dir: Path, minutes: float, *args: str) -> dict:
    """``fivectl train RECIPE --run RUN --max-minutes M --json ARGS``; returns its JSON summary."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fivectl.cli.main",
            "train",
            str(recipe),
            "--run",
            str(run_dir),
            "--max-minutes",
            str(minutes),
            "--json",
            *args,
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"training failed ({proc.returncode}): {proc.stderr[-3000:]}")
    return json.loads(proc.stdout)
