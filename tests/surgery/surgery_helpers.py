"""Shared pieces of the surgery tests: tiny networks with trained-looking statistics, superset schemas written
into a temporary schemas directory (read the way the code reads ``schemas/obs/vN.toml``), tiny runs."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest
import tomli_w
import torch
from shared_helpers import TINY
from typer.testing import CliRunner

from fivectl.cli.main import app
from fivectl.config.model import ModelConfig
from fivectl.model import PolicyNet
from fivectl.schema.spec import schema_from_dict

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()

TINY_MODEL = dict(
    unit_embed=8, unit_hidden=8, cat_embed=4, grid_channels=2, fc_size=16, lstm_size=12, attention_size=8, aux_hidden=8
)

# Fields the game's encoder can compute that schema v2 does not use: a superset built from them can be calibrated
# from simulated games. One is inserted mid-group (columns after it move), one is categorical (a new embedding).
EXTRA_FIELDS = {
    "self": [
        (3, {"name": "ability_cooldowns", "shape": [4], "doc": "seconds"}),
        (None, {"name": "item_ids", "kind": "categorical", "shape": [6], "vocab": 16}),
    ],
    "heroes": [(None, {"name": "move_speed"}), (None, {"name": "buffed", "kind": "bool"})],
    "creeps": [(None, {"name": "max_hp"})],
}


def tiny_cfg(**overrides) -> ModelConfig:
    return ModelConfig(**{**TINY_MODEL, **overrides})


def v2_dict() -> dict:
    return tomllib.loads((REPO / "schemas" / "obs" / "v2.toml").read_text())


def superset_dict(version: int = 9, drop_groups: tuple[str, ...] = ()) -> dict:
    d = v2_dict()
    d["version"] = version
    for g in d["groups"]:
        for index, field in EXTRA_FIELDS.get(g["name"], []):
            g["fields"].insert(len(g["fields"]) if index is None else index, field)
    d["groups"] = [g for g in d["groups"] if g["name"] not in drop_groups]
    return d


def schema_of(d: dict):
    return schema_from_dict(d, source="test")


def without_groups(d: dict, groups: tuple[str, ...]) -> dict:
    return {**d, "groups": [g for g in d["groups"] if g["name"] not in groups]}


@pytest.fixture
def schemas_dir(tmp_path, monkeypatch) -> Path:
    """A schemas directory with v1, v2 and the superset v9, selected through ``FIVECTL_SCHEMAS``."""
    root = tmp_path / "schemas"
    (root / "obs").mkdir(parents=True)
    for p in (REPO / "schemas" / "obs").glob("v*.toml"):
        shutil.copy(p, root / "obs" / p.name)
    (root / "obs" / "v9.toml").write_text(tomli_w.dumps(superset_dict(9)))
    monkeypatch.setenv("FIVECTL_SCHEMAS", str(root))
    return root


def trained_looking(net: PolicyNet, seed: int = 0) -> PolicyNet:
    """Random weights everywhere, biases included, and normalizer statistics far from the prior."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * (0.5 if p.dim() > 1 else 0.2))
        for name, b in net.named_buffers():
            if name.endswith(".mean"):
                b.copy_(torch.randn(b.shape, generator=g, dtype=b.dtype))
            elif name.endswith(".var"):
                b.copy_(torch.rand(b.shape, generator=g, dtype=b.dtype) * 3 + 0.1)
            elif name.endswith(".count"):
                b.fill_(1000.0)
    return net


def make_net(schema, cfg: ModelConfig, team_size: int = 1, seed: int = 0) -> PolicyNet:
    torch.manual_seed(seed)
    return trained_looking(PolicyNet(schema, cfg, team_size), seed).eval()


# the shared tiny recipe, saving rollouts every fragment (verify replays them) and growing the pool every version
TINY_RUN = TINY.replace("rollout_save_every = 2", "rollout_save_every = 1") + """[selfplay]
add_every = 1
latest_fraction = 0.5
"""


def invoke(*args: str):
    return runner.invoke(app, list(args))


def train_tiny(tmp: Path, name: str = "parent", samples: int = 300) -> Path:
    recipe = tmp / "tiny.toml"
    recipe.write_text(TINY_RUN)
    run = tmp / name
    result = invoke("train", str(recipe), "--run", str(run), "--workers", "0", "--max-samples", str(samples), "--json")
    assert result.exit_code == 0, result.output
    return run


@pytest.fixture(scope="session")
def tiny_run_template(tmp_path_factory) -> Path:
    """One tiny trained run (with a few pool versions and rollouts), copied by each test that changes runs."""
    return train_tiny(tmp_path_factory.mktemp("template"))


@pytest.fixture
def parent_run(tiny_run_template, tmp_path) -> Path:
    run = tmp_path / "parent"
    shutil.copytree(tiny_run_template, run)
    return run


def run_json(run: Path) -> dict:
    return json.loads((run / "run.json").read_text())
