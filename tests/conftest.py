"""Shared fixtures: the repository root and a CliRunner over the whole ``fivectl`` app."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]

# One torch thread per process: with 2 cores, more threads only fight each other.
torch.set_num_threads(1)


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def quickstart() -> Path:
    return REPO / "recipes" / "quickstart.toml"
