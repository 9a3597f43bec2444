"""``[curriculum]``: one ``fivectl train`` trains a 1v1 first stage, then the 5v5 run from its network."""

from __future__ import annotations

import json

import numpy as np
import pytest
from shared_helpers import TINY, assert_bad_input
from typer.testing import CliRunner

from fivectl.cli.main import app
from fivectl.store.checkpoint import CheckpointStore

runner = CliRunner()
FIRST_SAMPLES = 150


def train(*args: str):
    return runner.invoke(app, ["train", *args, "--json"])


def five_v_five(first: str, first_samples: int = FIRST_SAMPLES) -> str:
    """TINY as 5v5 on three lanes, seed 7, whose first stage is the recipe at ``first``."""
    recipe = TINY.replace("team_size = 1", "team_size = 5").replace("lanes = 1", "lanes = 3")
    recipe = recipe.replace("seed = 3", "seed = 7").replace('name = "tiny"', 'name = "tiny-five"')
    return recipe + f'[curriculum]\nfirst = "{first}"\nfirst_samples = {first_samples}\n'


@pytest.fixture
def recipes(tmp_path):
    first = tmp_path / "one.toml"
    first.write_text(TINY)
    main = tmp_path / "five.toml"
    main.write_text(five_v_five(str(first)))
    return first, main


def model_arrays(run, version):
    ckpt = CheckpointStore(run / "checkpoints.zarr").load(version, sections=("model",))
    return {k: np.array(ckpt.arrays["model"][k]) for k in ckpt.attrs["model_keys"]}


def samples_at(run, version) -> int:
    return CheckpointStore(run / "checkpoints.zarr").load_attrs(version)["counters"]["samples"]


def test_the_run_starts_from_its_first_stage_after_the_stage_trained_its_samples(recipes, tmp_path):
    _, main = recipes
    run = tmp_path / "run"
    result = train(str(main), "--run", str(run), "--max-samples", "100")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)

    stage = run / "first_stage"
    last = CheckpointStore(stage / "checkpoints.zarr").latest()
    assert samples_at(stage, last) >= FIRST_SAMPLES
    assert summary["first_stage"]["samples"] >= FIRST_SAMPLES and summary["samples"] >= 100
    # the stage trains with the run's seed, in the first recipe's game
    stage_recipe = (stage / "recipe.toml").read_text()
    assert "seed = 7" in stage_recipe and "team_size = 1" in stage_recipe

    meta = json.loads((run / "run.json").read_text())
    assert meta["init_from"] == f"{stage.resolve()}@{last}"
    source, start = model_arrays(stage, last), model_arrays(run, 0)
    fresh = sorted(k for k in start if source[k].shape != start[k].shape)
    assert fresh and all(k.startswith("aux.") for k in fresh)
    for key in start.keys() - set(fresh):
        np.testing.assert_array_equal(start[key], source[key], err_msg=key)
    assert samples_at(run, 0) == 0  # the run's own counters start anew


def test_a_run_stopped_in_its_first_stage_resumes_the_stage_then_trains_the_run(recipes, tmp_path):
    _, main = recipes
    (tmp_path / "five.toml").write_text(five_v_five(str(recipes[0]), first_samples=400))
    run = tmp_path / "run"
    stopped = train(str(main), "--run", str(run), "--max-minutes", "0.001")
    assert stopped.exit_code == 0, stopped.output
    summary = json.loads(stopped.stdout)
    assert summary["stage"] == "first" and summary["samples"] < 400
    assert "init_from" not in json.loads((run / "run.json").read_text())  # the run exists, not yet started
    assert CheckpointStore(run / "checkpoints.zarr").latest() is None

    resumed = train("--run", str(run), "--resume", "--max-minutes", "5", "--max-samples", "60")
    assert resumed.exit_code == 0, resumed.output
    summary = json.loads(resumed.stdout)
    assert summary["first_stage"]["samples"] >= 400 and summary["samples"] >= 60
    assert json.loads((run / "run.json").read_text())["init_from"].startswith(str((run / "first_stage").resolve()))

    stage_versions = CheckpointStore(run / "first_stage" / "checkpoints.zarr").versions()
    again = train("--run", str(run), "--resume", "--max-minutes", "5", "--max-samples", "120")  # the stage is done: the run goes on
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["first_stage"] is None and json.loads(again.stdout)["samples"] >= 120
    assert CheckpointStore(run / "first_stage" / "checkpoints.zarr").versions() == stage_versions


def test_a_first_stage_that_cannot_start_the_run_is_bad_input_before_anything_is_written(tmp_path):
    wider = tmp_path / "wide.toml"
    wider.write_text(TINY.replace("lstm_size = 16", "lstm_size = 32"))
    main = tmp_path / "five.toml"
    main.write_text(five_v_five(str(wider)))
    run = tmp_path / "run"
    assert_bad_input(train(str(main), "--run", str(run)), "curriculum.first (tiny)", "lstm")
    assert not run.exists()

    main.write_text(five_v_five(str(tmp_path / "one.toml")))
    (tmp_path / "one.toml").write_text(TINY)
    assert_bad_input(train(str(main), "--run", str(run), "--init-from", str(tmp_path)), "--init-from")
    assert not run.exists()

    main.write_text(TINY + "[curriculum]\nfirst_samples = 10\n")
    result = train(str(main), "--run", str(run))
    assert result.exit_code == 2 and "curriculum.first_samples" in result.output
    assert not run.exists()


def test_a_run_killed_between_its_stages_starts_from_the_finished_stage_without_training_it_again(recipes, tmp_path):
    from fivectl.runtime.curriculum import train_in_stages
    from fivectl.runtime.learner_loop import train_run
    from fivectl.runtime.run_setup import TrainOptions

    _, main = recipes
    run = tmp_path / "run"

    def killed_after_the_stage(opts: TrainOptions) -> dict:
        train_run(opts)
        raise SystemExit("killed")  # the process dies before the run's init_from is written

    with pytest.raises(SystemExit, match="killed"):
        train_in_stages(TrainOptions(run_dir=run, recipe_path=main, live=False), killed_after_the_stage)
    stage_versions = CheckpointStore(run / "first_stage" / "checkpoints.zarr").versions()
    assert "init_from" not in json.loads((run / "run.json").read_text())

    resumed = train("--run", str(run), "--resume", "--max-samples", "60")
    assert resumed.exit_code == 0, resumed.output
    summary = json.loads(resumed.stdout)
    assert summary["first_stage"]["samples"] >= FIRST_SAMPLES and summary["samples"] >= 60
    assert CheckpointStore(run / "first_stage" / "checkpoints.zarr").versions() == stage_versions
    assert json.loads((run / "run.json").read_text())["init_from"].endswith(f"@{stage_versions[-1]}")


def test_a_chain_of_first_stages_trains_each_stage_from_the_one_before(tmp_path):
    one = tmp_path / "one.toml"
    one.write_text(TINY)
    three = tmp_path / "three.toml"
    three.write_text(five_v_five(str(one), first_samples=100).replace("team_size = 5", "team_size = 3"))
    five = tmp_path / "five.toml"
    five.write_text(five_v_five(str(three), first_samples=120))
    run = tmp_path / "run"
    stopped = train(str(five), "--run", str(run), "--max-minutes", "0.001")  # stopped in the first of the chain
    assert stopped.exit_code == 0, stopped.output
    assert json.loads(stopped.stdout)["stage"] == "first"
    assert not (run / "first_stage" / "checkpoints.zarr").exists() or (
        CheckpointStore(run / "first_stage" / "checkpoints.zarr").latest() is None
    )
    result = train("--run", str(run), "--resume", "--max-minutes", "5", "--max-samples", "100")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)

    middle, first = run / "first_stage", run / "first_stage" / "first_stage"
    assert "team_size = 1" in (first / "recipe.toml").read_text()
    assert "team_size = 3" in (middle / "recipe.toml").read_text()
    assert samples_at(first, CheckpointStore(first / "checkpoints.zarr").latest()) >= 100
    middle_last = CheckpointStore(middle / "checkpoints.zarr").latest()
    assert samples_at(middle, middle_last) >= 120 and summary["samples"] >= 100
    assert summary["first_stage"]["first_stage"]["samples"] >= 100
    # each stage starts from the latest version of the one before it
    first_last = CheckpointStore(first / "checkpoints.zarr").latest()
    assert json.loads((middle / "run.json").read_text())["init_from"] == f"{first.resolve()}@{first_last}"
    assert json.loads((run / "run.json").read_text())["init_from"] == f"{middle.resolve()}@{middle_last}"
    source, start = model_arrays(middle, middle_last), model_arrays(run, 0)
    for key in (k for k in start if not k.startswith("aux.")):
        np.testing.assert_array_equal(start[key], source[key], err_msg=key)

    # runs show: each stage of the chain, its samples against those asked, its latest version
    shown = json.loads(runner.invoke(app, ["runs", "show", str(run), "--json"]).stdout)["first_stage"]
    assert (shown["name"], shown["samples_asked"], shown["latest_version"]) == ("tiny-five", 120, middle_last)
    assert shown["samples"] >= 120 and shown["first_stage"]["samples_asked"] == 100
    assert shown["first_stage"]["latest_version"] == first_last and shown["first_stage"]["first_stage"] is None
    text = runner.invoke(app, ["runs", "show", str(run)]).stdout
    assert f"first stage: tiny-five in {middle}" in text and "of 120 samples (done)" in text
    assert f"  first stage: tiny in {first}" in text


def test_a_chain_of_first_stages_that_loops_or_does_not_fit_is_bad_input_before_anything_is_written(tmp_path):
    looped = tmp_path / "loop.toml"
    looped.write_text(five_v_five(str(looped)))
    run = tmp_path / "run"
    assert_bad_input(train(str(looped), "--run", str(run)), "curriculum.first", "loop")
    assert not run.exists()

    wider = tmp_path / "wide.toml"
    wider.write_text(TINY.replace("lstm_size = 16", "lstm_size = 32"))
    three = tmp_path / "three.toml"
    three.write_text(five_v_five(str(wider)).replace("team_size = 5", "team_size = 3"))
    five = tmp_path / "five.toml"
    five.write_text(five_v_five(str(three)))
    assert_bad_input(train(str(five), "--run", str(run)), "curriculum.first (tiny)", "lstm")
    assert not run.exists()
