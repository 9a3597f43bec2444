from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from fivectl import __version__
from fivectl.cli.main import app
from fivectl.config import recipe_from_dict
from fivectl.store.rundir import RunDir

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = str(REPO / "recipes" / "quickstart.toml")
runner = CliRunner()


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and __version__ in result.output


def test_help_lists_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "recipe" in result.output and "runs" in result.output


def test_help_shows_bracketed_names_that_rich_markup_would_eat():
    result = runner.invoke(app, ["train", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "fivectl[ray]" in result.output and "same schema and [model]" in result.output


def test_recipe_show_json_applies_overrides():
    result = runner.invoke(app, ["recipe", "show", QUICKSTART, "--set", "train.workers=1", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["train"]["workers"] == 1 and data["game"]["team_size"] == 1


def test_recipe_show_toml_and_docs():
    assert "[train]" in runner.invoke(app, ["recipe", "show", QUICKSTART]).stdout
    docs = runner.invoke(app, ["recipe", "show", QUICKSTART, "--docs"])
    assert docs.exit_code == 0 and "train.learning_rate" in docs.stdout


def test_recipe_check_ok():
    result = runner.invoke(app, ["recipe", "check", QUICKSTART])
    assert result.exit_code == 0 and "ok" in result.stdout


def test_recipe_check_reports_all_errors_exit_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[train]\nlearning_rate = -1\nlernrate = 3\n[game]\nlanes = 2\nteam_size = "two"\n')
    result = runner.invoke(app, ["recipe", "check", str(bad)])
    assert result.exit_code == 2
    assert "train.learning_rate: must be >= 0, got -1" in result.stderr
    assert "did you mean train.learning_rate?" in result.stderr
    assert "game.lanes: must be one of 1, 3, got 2" in result.stderr
    assert "game.team_size: expected int" in result.stderr
    assert "Traceback" not in result.output


def test_bad_inputs_are_one_line_exit_2(tmp_path):
    missing = runner.invoke(app, ["recipe", "check", str(tmp_path / "nope.toml")])
    assert missing.exit_code == 2 and "no such file" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    broken = tmp_path / "broken.toml"
    broken.write_text("[train\n")
    unreadable = runner.invoke(app, ["recipe", "show", str(broken)])
    assert unreadable.exit_code == 2 and "unreadable TOML" in unreadable.stderr
    wrong_type = runner.invoke(app, ["recipe", "check", QUICKSTART, "--set", "train.workers=many"])
    assert wrong_type.exit_code == 2 and "train.workers: expected int" in wrong_type.stderr
    assert not list(tmp_path.glob("runs*"))


def test_runs_list(tmp_path):
    empty = runner.invoke(app, ["runs", "list", str(tmp_path)])
    assert empty.exit_code == 0 and "no runs" in empty.stdout
    RunDir.create(tmp_path / "a", recipe_from_dict({"name": "alpha"}))
    RunDir.create(tmp_path / "group" / "b", recipe_from_dict({"name": "beta"}))
    result = runner.invoke(app, ["runs", "list", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    names = sorted(r["name"] for r in json.loads(result.stdout))
    assert names == ["alpha", "beta"]
    missing = runner.invoke(app, ["runs", "list", str(tmp_path / "nothing")])
    assert missing.exit_code == 2 and "no such directory" in missing.stderr
