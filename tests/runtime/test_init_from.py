"""``fivectl train --init-from``: a 5v5 run that starts from a 1v1 run's network."""

from __future__ import annotations

import json

import numpy as np
import pytest
from shared_helpers import TINY, assert_bad_input
from typer.testing import CliRunner

from fivectl.cli.main import app
from fivectl.store.checkpoint import CheckpointStore

runner = CliRunner()
FIVE_V_FIVE = ("--set", "game.team_size=5", "--set", "game.lanes=3", "--set", "train.keep_last=100")


def train(*args: str):
    return runner.invoke(app, ["train", *args, "--json"])


def model_arrays(run, version):
    ckpt = CheckpointStore(run / "checkpoints.zarr").load(version, sections=("model",))
    return {k: np.array(ckpt.arrays["model"][k]) for k in ckpt.attrs["model_keys"]}


@pytest.fixture(scope="module")
def trained_1v1(tmp_path_factory):
    """A tiny 1v1 run trained a few iterations (read only by the tests) and its latest version."""
    root = tmp_path_factory.mktemp("source")
    (root / "tiny.toml").write_text(TINY)
    parent = root / "one"
    result = train(str(root / "tiny.toml"), "--run", str(parent), "--max-samples", "200")
    assert result.exit_code == 0, result.output
    return parent, json.loads(result.stdout)["version"]


def test_a_5v5_run_starts_from_a_1v1_version_with_only_the_team_sized_head_fresh(
    trained_1v1, tiny_recipe, tmp_path
):
    parent, version = trained_1v1
    child = tmp_path / "five"
    spec = f"{parent}@{version}"
    result = train(str(tiny_recipe), "--run", str(child), *FIVE_V_FIVE, "--init-from", spec, "--max-samples", "100")
    assert result.exit_code == 0, result.output

    source, start = model_arrays(parent, version), model_arrays(child, 0)
    fresh = sorted(k for k in start if source[k].shape != start[k].shape)
    assert fresh and all(k.startswith("aux.networth_rank") for k in fresh)
    for key in start.keys() - set(fresh):
        np.testing.assert_array_equal(start[key], source[key], err_msg=key)
    # the fresh head is the 5v5 network's own initialization, not zeros
    assert any(np.abs(start[k]).sum() > 0 for k in fresh)

    meta = json.loads((child / "run.json").read_text())
    assert meta["init_from"] == f"{parent.resolve()}@{version}"
    (entry,) = [e for e in meta["lineage"] if e["event"] == "init_from"]
    assert entry["source_version"] == version and entry["fresh"] == fresh
    assert CheckpointStore(child / "checkpoints.zarr").latest() > 0  # and it trained on
    shown = runner.invoke(app, ["runs", "show", str(child)])
    assert f"started from: one@{version} (fresh: {', '.join(fresh)})" in " ".join(shown.stdout.split())
    assert CheckpointStore(parent / "checkpoints.zarr").latest() == version  # the source is untouched


def test_a_run_killed_before_its_first_checkpoint_resumes_from_the_same_weights(
    trained_1v1, tiny_recipe, tmp_path
):
    from fivectl.config import load_recipe
    from fivectl.store.rundir import RunDir

    parent, version = trained_1v1
    child = tmp_path / "five"
    # what `train --init-from` leaves when killed after creating the run, before writing version 0
    recipe = load_recipe(tiny_recipe, list(FIVE_V_FIVE[1::2]))
    RunDir.create(child, recipe, extra={"init_from": f"{parent.resolve()}@{version}"})
    result = train("--run", str(child), "--resume", "--max-samples", "50")
    assert result.exit_code == 0, result.output
    start, source = model_arrays(child, 0), model_arrays(parent, version)
    np.testing.assert_array_equal(start["lstm.weight_ih_l0"], source["lstm.weight_ih_l0"])


def test_init_from_bad_inputs_write_nothing(trained_1v1, tiny_recipe, tmp_path):
    parent, _ = trained_1v1
    child = tmp_path / "five"
    wider = train(str(tiny_recipe), "--run", str(child), "--set", "model.lstm_size=32", "--init-from", str(parent))
    assert_bad_input(wider, "lstm.weight_hh_l0 is [64, 16], the recipe's [128, 32]", "differs from the recipe's [model]")
    assert not child.exists()
    other_schema = train(
        str(tiny_recipe), "--run", str(child), "--set", "model.schema_version=1", "--init-from", str(parent)
    )
    assert_bad_input(other_schema, "observation schema")
    assert_bad_input(train(str(tiny_recipe), "--run", str(child), "--init-from", str(tmp_path / "nope")), "nope")
    assert_bad_input(train(str(tiny_recipe), "--run", str(child), "--init-from", f"{parent}@999"), "v999")
    assert not child.exists()
    versions = CheckpointStore(parent / "checkpoints.zarr").versions()
    assert_bad_input(train("--run", str(parent), "--resume", "--init-from", str(parent)), "--init-from")
    assert CheckpointStore(parent / "checkpoints.zarr").versions() == versions
