"""``RUN@latest`` plays the newest checkpoint that loads: past a corrupt newest one with a one-line warning (as
training resumes), while an explicit ``RUN@VERSION`` that is corrupt stays an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fivectl.cli.main import app
from fivectl.config import load_recipe
from fivectl.config.loader import to_dict
from fivectl.model import PolicyNet
from fivectl.schema import load_schema
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.rundir import RunDir

runner = CliRunner()


def policy_run(path: Path, recipe_path: Path, versions: tuple[int, ...]) -> RunDir:
    """A run directory whose checkpoints hold an untrained policy in the layout players load (model section,
    schema, model config, team size, parameter names)."""
    recipe = load_recipe(recipe_path)
    run = RunDir.create(path, recipe)
    schema = load_schema(recipe.model.schema_version)
    net = PolicyNet(schema, recipe.model, recipe.game.team_size)
    state = net.state_dict()
    attrs = {
        "schema_version": schema.version,
        "schema": schema.to_json(),
        "model_config": to_dict(recipe.model),
        "team_size": recipe.game.team_size,
        "model_keys": list(state),
    }
    store = CheckpointStore(run.checkpoints_path)
    for v in versions:
        store.save(v, {"model": {k: t.detach().numpy() for k, t in state.items()}}, attrs)
    return run


def corrupt_model(run: RunDir, version: int) -> None:
    chunk = next((run.checkpoints_path / f"v{version:08d}" / "model").glob("__pack*/c/0"))
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0xFF
    chunk.write_bytes(bytes(data))


def match(tiny_recipe: Path, a: str, *extra: str):
    args = ["evaluate", "match", a, "random", "--games", "2", "--recipe", str(tiny_recipe)]
    return runner.invoke(app, [*args, "--set", "game.time_limit_s=5", *extra])


@pytest.fixture
def run_with_corrupt_newest(tiny_recipe: Path, tmp_path: Path) -> RunDir:
    run = policy_run(tmp_path / "run", tiny_recipe, (2, 4))
    corrupt_model(run, 4)
    return run


def test_latest_falls_back_past_a_corrupt_newest_checkpoint_with_one_warning_line(
    run_with_corrupt_newest: RunDir, tiny_recipe: Path
) -> None:
    spec = f"{run_with_corrupt_newest.path}@latest"
    result = match(tiny_recipe, spec, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # stdout stays pure JSON
    assert (data["a"], data["games"]) == (spec, 2)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("warning: ") and "v4" in lines[0] and "loaded v2" in lines[0]


def test_an_explicit_corrupt_version_stays_an_error(
    run_with_corrupt_newest: RunDir, tiny_recipe: Path
) -> None:
    result = match(tiny_recipe, f"{run_with_corrupt_newest.path}@4")
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "v4 is corrupt" in lines[0], result.stderr
    assert "Traceback" not in result.output


def test_latest_with_a_good_newest_checkpoint_warns_nothing(tiny_recipe: Path, tmp_path: Path) -> None:
    run = policy_run(tmp_path / "run", tiny_recipe, (2, 4))
    result = match(tiny_recipe, f"{run.path}@latest", "--json")
    assert result.exit_code == 0, result.output
    assert result.stderr.strip() == ""
