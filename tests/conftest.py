"""Shared fixtures: the repository root and a CliRunner over the whole ``fivectl`` app; the ``gpu`` marker."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from shared_helpers import TINY

REPO = Path(__file__).resolve().parents[1]

# One torch thread per process: with 2 cores, more threads only fight each other.
torch.set_num_threads(1)
# `--device auto` means cpu in every test (and the trainers they start): a machine with a GPU runs the same
# tests; the CUDA tests ask for cuda by name.
os.environ["FIVECTL_AUTO_DEVICE"] = "cpu"
# Deterministic cuBLAS for the gpu tests that compare bitwise (read when CUDA starts, so set before any test).
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` skip on a machine without CUDA (``make test`` passes there; ``make test-gpu`` runs
    only them)."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def quickstart() -> Path:
    return REPO / "recipes" / "quickstart.toml"


@pytest.fixture
def tiny_recipe(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return path
