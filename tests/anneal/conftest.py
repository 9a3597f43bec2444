"""Fixtures of the anneal tests: one tiny run trained once per test session, copied by each test that uses it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from shared_helpers import TINY
from typer.testing import CliRunner

from fivectl.cli.main import app

# The guard plays the anchor alone (nothing to calibrate) a few short games: seconds per evaluation.
RECIPE = (
    TINY
    + '\n[eval]\nreferences = ["random"]\ngames = 2\ngames_per_match = 2\n'
    + "\n[anneal]\nguard_games = 2\nbaseline_games = 4\n"
)


@pytest.fixture(scope="session")
def rated_run(tmp_path_factory) -> Path:
    """A tiny run trained a little, once per session: tests that change a run work on a copy (``run``)."""
    root = tmp_path_factory.mktemp("anneal")
    recipe = root / "tiny.toml"
    recipe.write_text(RECIPE)
    run = root / "run"
    trained = CliRunner().invoke(app, ["train", str(recipe), "--run", str(run), "--max-samples", "128"])
    assert trained.exit_code == 0, trained.output
    return run


@pytest.fixture
def run(rated_run, tmp_path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(rated_run, copy)
    return copy
