"""A tiny training recipe: seconds per run, every code path of the trainer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TINY = """
name = "tiny"
[game]
team_size = 1
lanes = 1
time_limit_s = 30.0
[model]
unit_embed = 8
unit_hidden = 16
cat_embed = 4
grid_channels = 4
fc_size = 32
lstm_size = 16
[train]
seed = 3
workers = 0
games_per_worker = 2
fragment_length = 16
bptt = 8
batch_windows = 8
publish_every = 1
checkpoint_every = 2
keep_last = 3
milestone_every = 0
rollout_save_every = 2
"""


@pytest.fixture
def tiny_recipe(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return path


@pytest.fixture
def cli():
    return fivectl


def fivectl(*args: str, timeout: float = 240, **kwargs) -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess (the kill tests need a real process)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("FIVECTL_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "fivectl.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        **kwargs,
    )
