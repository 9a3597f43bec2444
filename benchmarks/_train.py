"""Shared by the benchmarks: train a recipe for some wall-clock minutes through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def train_for(
    recipe: Path,
    run_dir: Path,
    minutes: float,
    *args: str,
    code: Path | None = None,
    timeout: float | None = None,
) -> dict:
    """``fivectl train RECIPE --run RUN --max-minutes M --json ARGS``; returns its JSON summary.

    ``code``: a checkout of another version of fivectl to run instead of the installed one (first on
    ``PYTHONPATH``, which the editable install's import hook comes after), e.g. the old code of an A/B comparison.
    ``timeout``: seconds after which the run is killed and counts as failed.
    """
    env = None
    if code is not None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(code), os.environ.get("PYTHONPATH")]))}
    try:
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
            env=env,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise SystemExit(f"training did not end within {timeout:.0f} s") from None
    if proc.returncode != 0:
        raise SystemExit(f"training failed ({proc.returncode}): {proc.stderr[-3000:]}")
    return json.loads(proc.stdout)
