"""Tiny checkpoints for the draft tests: an untrained policy in a run directory, as players load it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from fivectl.config import load_recipe
from fivectl.config.loader import to_dict
from fivectl.model import PolicyNet
from fivectl.schema import load_schema
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.rundir import RunDir

RECIPE = """
name = "tiny-draft"
[game]
team_size = {team_size}
lanes = 1
time_limit_s = 4.0
[model]
schema_version = {schema}
unit_embed = 8
unit_hidden = 8
cat_embed = 4
grid_channels = 2
fc_size = 16
lstm_size = 16
attention_size = 8
aux_hidden = 8
"""


def make_policy_run(path: Path, team_size: int = 1, version: int = 3, seed: int = 0, schema: int = 3) -> RunDir:
    recipe_path = path.parent / f"{path.name}.toml"
    recipe_path.write_text(RECIPE.format(team_size=team_size, schema=schema))
    recipe = load_recipe(recipe_path)
    run = RunDir.create(path, recipe)
    schema = load_schema(recipe.model.schema_version)
    torch.manual_seed(seed)
    net = PolicyNet(schema, recipe.model, team_size)
    with torch.no_grad():  # a win head whose output depends visibly on the observation
        for p in net.aux["win"].parameters():
            p.mul_(4.0)
    state = net.state_dict()
    attrs = {
        "schema_version": schema.version,
        "schema": schema.to_json(),
        "model_config": to_dict(recipe.model),
        "game_config": to_dict(recipe.game),
        "team_size": team_size,
        "model_keys": list(state),
    }
    CheckpointStore(run.checkpoints_path).save(
        version, {"model": {k: t.detach().numpy() for k, t in state.items()}}, attrs
    )
    return run


@pytest.fixture
def run1v1(tmp_path: Path) -> RunDir:
    return make_policy_run(tmp_path / "run1v1", team_size=1)


@pytest.fixture
def run_v2(tmp_path: Path) -> RunDir:
    """A model of schema v2: no enemy lineup in its first frame."""
    return make_policy_run(tmp_path / "run_v2", team_size=1, schema=2)


@pytest.fixture
def run2v2(tmp_path: Path) -> RunDir:
    return make_policy_run(tmp_path / "run2v2", team_size=2)
