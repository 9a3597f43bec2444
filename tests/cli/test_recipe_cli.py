"""``fivectl recipe list`` and recipes given by name (``fivectl train quickstart``) from any directory."""

from __future__ import annotations

import json
from pathlib import Path

from shared_helpers import assert_bad_input
from typer.testing import CliRunner

from fivectl.cli.main import app
from fivectl.store.rundir import RunDir

PACKAGE_RECIPES = Path(__file__).resolve().parents[2] / "fivectl" / "recipes"
runner = CliRunner()


def test_recipe_list_shows_each_shipped_recipe_with_its_description(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    listed = runner.invoke(app, ["recipe", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)
    assert [r["name"] for r in rows] == sorted(p.stem for p in PACKAGE_RECIPES.glob("*.toml"))
    quickstart = next(r for r in rows if r["name"] == "quickstart")
    assert Path(quickstart["path"]) == PACKAGE_RECIPES / "quickstart.toml"
    assert quickstart["description"].startswith("1v1, one lane")

    plain = runner.invoke(app, ["recipe", "list"])
    assert plain.exit_code == 0, plain.output
    lines = plain.stdout.strip().splitlines()
    assert len(lines) == len(rows)
    for line, row in zip(lines, rows, strict=True):
        assert line.split()[0] == row["name"] and line.endswith(row["description"])


def test_recipe_commands_take_a_shipped_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shown = runner.invoke(app, ["recipe", "show", "quickstart", "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["name"] == "quickstart"
    assert runner.invoke(app, ["recipe", "check", "five-v-five"]).exit_code == 0
    summary = runner.invoke(app, ["model", "summary", "quickstart", "--json"])
    assert summary.exit_code == 0 and json.loads(summary.stdout)["parameters"] > 0


def test_train_by_name_from_another_directory_records_the_shipped_recipe(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    small = ["train.workers=0", "train.games_per_worker=2", "train.fragment_length=16", "train.bptt=8",
             "train.batch_windows=8", "game.time_limit_s=30.0"]  # fmt: skip
    args = ["train", "quickstart", "--run", str(run), "--max-samples", "64", "--json"]
    result = runner.invoke(app, [*args, *(a for o in small for a in ("--set", o))])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["checkpoint"] is not None
    opened = RunDir.open(run)
    assert opened.load_recipe().name == "quickstart"
    assert opened.meta["recipe_source"] == str(PACKAGE_RECIPES / "quickstart.toml")


def test_an_unknown_recipe_name_is_one_line_listing_the_shipped_ones_and_writes_nothing(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    result = runner.invoke(app, ["train", "quickstrat", "--run", str(run)])
    assert_bad_input(result, "quickstrat", "quickstart", "five-v-five", "paper-scale")
    assert not run.exists()
    assert_bad_input(runner.invoke(app, ["recipe", "show", "nope"]), "nope", "quickstart")
    assert list(tmp_path.iterdir()) == []
