"""End-to-end training in serial mode: checkpoints, metrics, resume, refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from fivectl.cli.main import app
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.metrics import MetricsLog
from fivectl.store.rollouts import read_rollouts

runner = CliRunner()


def train(*args: str):
    return runner.invoke(app, ["train", *args, "--json"])


def test_serial_train_writes_checkpoints_metrics_and_rollouts(tiny_recipe, tmp_path):
    run = tmp_path / "run"
    result = train(str(tiny_recipe), "--run", str(run), "--workers", "0", "--max-samples", "400")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["stop_reason"] == "max_samples" and summary["samples"] >= 400
    store = CheckpointStore(run / "checkpoints.zarr")
    assert store.latest() == summary["version"] > 0
    ckpt = store.load()
    assert ckpt.attrs["schema_version"] == 2 and ckpt.attrs["counters"]["samples"] == summary["samples"]
    table = MetricsLog(run / "metrics").read()
    iterations = table.column("iteration").to_pylist()
    assert iterations == list(range(1, summary["iterations"] + 1))
    for column in ("policy_loss", "value_loss", "entropy", "samples_per_s", "staleness_mean", "sample_reuse"):
        assert column in table.column_names
    assert np.isfinite(table.column("policy_loss").to_numpy()).all()
    fragments = list(read_rollouts(run / "rollouts"))
    assert fragments and fragments[0].schema_version == 2


def test_resume_continues_without_gaps(tiny_recipe, tmp_path):
    run = tmp_path / "run"
    first = json.loads(train(str(tiny_recipe), "--run", str(run), "--max-samples", "200").stdout)
    again = train("--run", str(run), "--resume", "--max-samples", "500")
    assert again.exit_code == 0, again.output
    second = json.loads(again.stdout)
    assert second["version"] > first["version"] and second["samples"] >= 500
    iterations = MetricsLog(run / "metrics").read().column("iteration").to_pylist()
    assert iterations == list(range(1, second["iterations"] + 1))


def test_resume_refuses_another_model_or_schema(tiny_recipe, tmp_path):
    run = tmp_path / "run"
    assert train(str(tiny_recipe), "--run", str(run), "--max-samples", "100").exit_code == 0
    wider = train("--run", str(run), "--resume", "--set", "model.lstm_size=32")
    assert wider.exit_code == 2
    assert "lstm_size: 16 -> 32" in wider.stderr and "surgery" in wider.stderr
    schema = train("--run", str(run), "--resume", "--set", "model.schema_version=1")
    assert schema.exit_code == 2 and "v1" in schema.stderr


def test_starting_over_an_existing_run_is_refused(tiny_recipe, tmp_path):
    run = tmp_path / "run"
    assert train(str(tiny_recipe), "--run", str(run), "--max-samples", "50").exit_code == 0
    before = CheckpointStore(run / "checkpoints.zarr").versions()
    again = train(str(tiny_recipe), "--run", str(run), "--max-samples", "50")
    assert again.exit_code == 2 and "--resume" in again.stderr
    assert CheckpointStore(run / "checkpoints.zarr").versions() == before


def test_bad_inputs(tiny_recipe, tmp_path):
    assert train(str(tmp_path / "missing.toml"), "--run", str(tmp_path / "r")).exit_code == 2
    assert train("--run", str(tmp_path / "nothing"), "--resume").exit_code == 2
    bad = train(str(tiny_recipe), "--run", str(tmp_path / "r2"), "--set", "train.fragment_length=12")
    assert bad.exit_code == 2 and "multiple of train.bptt" in bad.stderr
    assert not (tmp_path / "r2").exists()
    import torch

    if not torch.cuda.is_available():
        cuda = train(str(tiny_recipe), "--run", str(tmp_path / "r3"), "--device", "cuda")
        assert cuda.exit_code == 2 and "no CUDA device" in cuda.stderr
        assert not (tmp_path / "r3").exists()


def test_opponent_pool_grows_is_kept_and_resumes(tiny_recipe, tmp_path):
    run = tmp_path / "run"
    first = train(
        str(tiny_recipe),
        "--run",
        str(run),
        "--max-samples",
        "700",
        "--set",
        "selfplay.add_every=2",
        "--set",
        "train.keep_last=1",
    )
    assert first.exit_code == 0, first.output
    store = CheckpointStore(run / "checkpoints.zarr")
    pool = store.load().attrs["opponent_pool"]
    versions = pool["versions"]
    assert len(versions) >= 2 and all(v % 2 == 0 for v in versions)
    assert set(versions) <= set(store.versions())  # pool versions survive pruning (keep_last=1)
    # ... as their model only (what opponents load); the latest and the milestones (v0) stay whole
    slimmed = 0
    for v in store.versions():
        sections = {p.name for p in (run / "checkpoints.zarr" / f"v{v:08d}").iterdir() if p.is_dir()}
        whole = v == store.latest() or v % 100 == 0
        assert sections == ({"model", "optimizer", "reward_scaler", "rng"} if whole else {"model"}), v
        slimmed += not whole
    assert slimmed >= 1
    table = MetricsLog(run / "metrics").read()
    assert table.column("pool_size").to_pylist()[-1] == len(versions)
    # Some games were played against past versions: only the learner's side is trained on then.
    again = train("--run", str(run), "--resume", "--max-samples", "1200")
    assert again.exit_code == 0, again.output
    after = CheckpointStore(run / "checkpoints.zarr").load().attrs["opponent_pool"]
    assert after["versions"][: len(versions)] == versions


def test_periodic_trueskill_evaluation_lands_in_the_league(tiny_recipe, tmp_path):
    run = tmp_path / "run"
    result = train(
        str(tiny_recipe),
        "--run",
        str(run),
        "--max-samples",
        "200",
        "--set",
        "eval.every_versions=2",
        "--set",
        "eval.games=2",
    )
    assert result.exit_code == 0, result.output
    league = json.loads((run / "league" / "league.json").read_text())
    rated = [a for a in league["agents"] if a.get("version") is not None]
    assert rated and all(a["version"] % 2 == 0 for a in rated)
    assert league["games"]


@pytest.mark.gpu
def test_training_on_cuda_completes_and_resumes(tiny_recipe, tmp_path):
    run = tmp_path / "run"
    first = train(str(tiny_recipe), "--run", str(run), "--device", "cuda", "--max-samples", "200")
    assert first.exit_code == 0, first.output
    assert "cuda" in CheckpointStore(run / "checkpoints.zarr").load().arrays["rng"]  # the CUDA RNG is saved
    again = train("--run", str(run), "--resume", "--device", "cuda", "--max-samples", "500")
    assert again.exit_code == 0, again.output
    assert "resumed from checkpoint" in again.stderr
    second = json.loads(again.stdout)
    assert second["samples"] >= 500 and second["version"] > json.loads(first.stdout)["version"]
    table = MetricsLog(run / "metrics").read()
    assert table.column("iteration").to_pylist() == list(range(1, second["iterations"] + 1))
    assert np.isfinite(table.column("policy_loss").to_numpy()).all()


def test_a_weight_average_is_checkpointed_played_by_evaluation_and_restored(tiny_recipe, tmp_path):
    import torch

    from fivectl.errors import BadInput
    from fivectl.evaluate.policy_agent import load_policy
    from fivectl.runtime.run_state import RunCheckpoints, build_learner_state
    from fivectl.store.rundir import RunDir

    run = tmp_path / "run"
    args = ("--run", str(run), "--workers", "0", "--set", "train.average_samples=150")
    assert train(str(tiny_recipe), *args, "--max-samples", "300").exit_code == 0
    ckpt = CheckpointStore(run / "checkpoints.zarr").load()
    average, model = ckpt.arrays["model_average"], ckpt.arrays["model"]
    assert set(average) == set(model) == set(ckpt.attrs["model_keys"])
    moved = [k for k in model if not np.array_equal(average[k], model[k])]
    assert moved and all(".weight" in k or ".bias" in k for k in moved)  # statistics are copied, not averaged
    # evaluation plays the average unless told otherwise
    played = {w: load_policy(run, None, w)[0].state_dict() for w in ("auto", "average", "trained")}
    assert all(np.array_equal(played["auto"][k].numpy(), average[k]) for k in average)
    assert all(np.array_equal(played["trained"][k].numpy(), model[k]) for k in model)
    # a resume restores it exactly
    rundir = RunDir.open(run)
    recipe = rundir.load_recipe()
    schema = rundir.obs_schema(recipe.model.schema_version)
    state = build_learner_state(recipe, schema, torch.device("cpu"), 1)
    RunCheckpoints(rundir, recipe, schema, note=lambda _: None).restore(state)
    assert all(np.array_equal(state.average.weights[k].numpy(), average[k]) for k in average)
    again = train(*args, "--resume", "--max-samples", "500")
    assert again.exit_code == 0, again.output
    assert "model_average" in CheckpointStore(run / "checkpoints.zarr").load().arrays
    # a run without one: the trained weights, and a clear error when the average is asked for
    plain = tmp_path / "plain"
    assert train(str(tiny_recipe), "--run", str(plain), "--workers", "0", "--max-samples", "100").exit_code == 0
    assert "model_average" not in CheckpointStore(plain / "checkpoints.zarr").load().arrays
    with pytest.raises(BadInput, match="no weight average"):
        load_policy(plain, None, "average")
    for spec, code in ((f"{run}@latest:trained", 0), (f"{plain}@latest:average", 2), (f"{run}@latest:best", 2)):
        result = runner.invoke(app, ["evaluate", "match", spec, "random", "--games", "2", "--json"])
        assert result.exit_code == code, result.output
    assert "expected :trained or :average" in result.stderr and "Traceback" not in result.output


def test_a_mix_of_bot_levels_gets_a_win_rate_per_level_in_the_metrics(tiny_recipe, tmp_path):
    run = tmp_path / "run"
    mix = ("--set", "selfplay.bot_fraction=1.0", "--set", 'selfplay.bots=["bot:easy", "bot:passive"]')
    short = ("--set", "train.games_per_worker=8", "--set", "game.time_limit_s=4")  # games that end
    result = train(str(tiny_recipe), "--run", str(run), "--max-samples", "600", *mix, *short)
    assert result.exit_code == 0, result.output
    table = MetricsLog(run / "metrics").read()
    for level in ("easy", "passive"):
        rates = [r for r in table.column(f"bot_win_rate_recent_{level}").to_pylist() if r is not None]
        assert rates and all(0.0 <= r <= 1.0 for r in rates), level
