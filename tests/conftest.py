"""Shared fixtures: the repository root and a CliRunner over the whole ``fivectl`` app."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]

# One torch thread per process: with 2 cores, more threads only fight each other.
torch.set_num_threads(1)
# `--device auto` means cpu in every test (and the trainers they start): a machine with a GPU runs the same
# tests; the CUDA tests ask for cuda by name.
os.environ["FIVECTL_AUTO_DEVICE"] = "cpu"


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def quickstart() -> Path:
    return REPO / "recipes" / "quickstart.toml"


# A tiny training recipe: seconds per run, every code path of the trainer.
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
