"""``fivectl evaluate trueskill`` and ``pin`` on a tiny trained run (end to end, real games)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from fivectl.cli.main import app

runner = CliRunner()


def test_trueskill_rates_checkpoints_accumulates_and_pins(tiny_recipe, tmp_path):
    run = tmp_path / "run"
    trained = runner.invoke(app, ["train", str(tiny_recipe), "--run", str(run), "--max-samples", "200"])
    assert trained.exit_code == 0, trained.output

    plot = tmp_path / "ratings.png"
    first = runner.invoke(
        app,
        [
            "evaluate",
            "trueskill",
            str(run),
            "--versions",
            "all",
            "--games",
            "4",
            "--json",
            "--plot",
            str(plot),
        ],
    )
    assert first.exit_code == 0, first.output
    data = json.loads(first.stdout)
    board = {row["name"]: row for row in data["leaderboard"]}
    assert board["random"]["mu"] == 0.0 and board["random"]["fixed"]
    rated = [f"v{v}" for v in data["rated"]]
    assert rated and all(name in board for name in rated)
    assert plot.stat().st_size > 0
    games_before = sum(row["games"] for row in data["leaderboard"])

    again = runner.invoke(app, ["evaluate", "trueskill", str(run), "--games", "4", "--json"])
    assert again.exit_code == 0, again.output
    assert sum(row["games"] for row in json.loads(again.stdout)["leaderboard"]) > games_before

    latest = data["rated"][-1]
    pinned = runner.invoke(app, ["evaluate", "pin", f"{run}@{latest}", "--json"])
    assert pinned.exit_code == 0, pinned.output
    assert json.loads(pinned.stdout)["pinned"] == f"v{latest}"

    text = runner.invoke(app, ["evaluate", "trueskill", str(run), "--games", "2"])
    assert text.exit_code == 0 and "leaderboard" in text.stdout


def test_trueskill_bad_inputs(tiny_recipe, tmp_path):
    missing = runner.invoke(app, ["evaluate", "trueskill", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no such run" in missing.stderr
    run = tmp_path / "run"
    assert (
        runner.invoke(app, ["train", str(tiny_recipe), "--run", str(run), "--max-samples", "32"]).exit_code
        == 0
    )
    unknown = runner.invoke(app, ["evaluate", "trueskill", str(run), "--versions", "999"])
    assert unknown.exit_code == 2 and "no checkpoint v999" in unknown.stderr
    league = run / "league" / "league.json"
    league.parent.mkdir(exist_ok=True)
    league.write_text("{corrupt")
    corrupt = runner.invoke(app, ["evaluate", "trueskill", str(run), "--games", "2"])
    assert corrupt.exit_code == 2 and "league.json" in corrupt.stderr
    assert league.read_text() == "{corrupt"
    bad_pin = runner.invoke(app, ["evaluate", "pin", f"{run}@latest"])
    assert bad_pin.exit_code == 2
