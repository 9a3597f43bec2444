"""``fivectl draft`` end to end on a tiny 1v1 checkpoint: one test per subcommand, and bad input exits 2 with
one line and writes nothing."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from fivectl.cli.main import app
from fivectl.draft.table import open_table

runner = CliRunner()


@pytest.fixture
def table(tmp_path, run1v1):
    out = tmp_path / "t.zarr"
    result = runner.invoke(app, ["draft", "precompute", f"{run1v1.path}@3", "--out", str(out), "--chunk", "128"])
    assert result.exit_code == 0, result.output
    return out


def test_precompute_writes_a_complete_table_and_a_rerun_skips_it(tmp_path, run1v1, table):
    assert open_table(table).complete
    again = runner.invoke(
        app, ["draft", "precompute", f"{run1v1.path}@3", "--out", str(table), "--chunk", "128", "--game", "1v1",
              "--json"]
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)
    assert (report["lineups"], report["chunks_skipped"], report["chunks_computed"]) == (272, 3, 0)
    assert (report["game"], report["model_version"], report["schema_version"]) == ("1v1", 3, 3)
    wrong = runner.invoke(app, ["draft", "precompute", f"{run1v1.path}@3", "--out", str(tmp_path / "x.zarr"),
                                "--game", "5v5"])  # fmt: skip
    assert wrong.exit_code == 2 and "the model plays 1v1" in wrong.stderr
    assert not (tmp_path / "x.zarr").exists()


def test_precompute_methods_give_the_same_table_and_an_unknown_method_is_refused(tmp_path, run1v1, table):
    out = tmp_path / "direct.zarr"
    direct = runner.invoke(app, ["draft", "precompute", f"{run1v1.path}@3", "--out", str(out), "--chunk", "128",
                                 "--method", "direct", "--json"])  # fmt: skip
    assert direct.exit_code == 0, direct.output
    assert json.loads(direct.stdout)["method"] == "direct"
    assert abs(open_table(out).values - open_table(table).values).max() < 2e-6  # the fixture's table: factored
    bad = runner.invoke(app, ["draft", "precompute", f"{run1v1.path}@3", "--out", str(tmp_path / "x.zarr"),
                              "--method", "fast"])  # fmt: skip
    assert bad.exit_code == 2 and bad.stderr.strip() == "error: --method: factored or direct, got 'fast'"
    assert not (tmp_path / "x.zarr").exists()


def test_precompute_runs_the_threads_asked_for_and_refuses_fewer_than_one(tmp_path, run1v1):
    import torch

    before = torch.get_num_threads()
    try:
        ok = runner.invoke(app, ["draft", "precompute", f"{run1v1.path}@3", "--out", str(tmp_path / "t.zarr"),
                                 "--threads", "2", "--limit", "1"])  # fmt: skip
        assert ok.exit_code == 0, ok.output
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    bad = runner.invoke(app, ["draft", "precompute", f"{run1v1.path}@3", "--out", str(tmp_path / "x.zarr"),
                              "--threads", "0"])  # fmt: skip
    assert bad.exit_code == 2 and bad.stderr.strip() == "error: --threads: at least 1, got 0"
    assert not (tmp_path / "x.zarr").exists()


def test_advise_one_shot_json_and_bad_names(table):
    result = runner.invoke(app, ["draft", "advise", str(table), "--picks", "Kestrel |", "--json"])
    assert result.exit_code == 0, result.output
    advice = json.loads(result.stdout)
    assert advice["team"] == 1 and advice["picks"] == [["Kestrel"], []]
    values = open_table(table)
    # team 1's best reply to Kestrel is the lineup with the lowest P(team 0 wins) among Kestrel's
    rows = values.space.lineups(0, 272)
    kestrel = rows[:, 0, 0] == 10
    best = values.values[kestrel].argmin()
    assert advice["p_team0_win"] == pytest.approx(float(values.values[kestrel][best]), abs=1e-6)
    assert advice["win_prob"] == pytest.approx(1 - advice["p_team0_win"])
    bad = runner.invoke(app, ["draft", "advise", str(table), "--picks", "Kestril |"])
    assert bad.exit_code == 2
    assert len(bad.stderr.strip().splitlines()) == 1 and "did you mean Kestrel" in bad.stderr
    order = runner.invoke(app, ["draft", "advise", str(table), "--order", "1-2", "--picks", "|"])
    assert order.exit_code == 2 and "must sum to 2" in order.stderr


def test_advise_interactive_takes_suggestions_and_retries_a_bad_name(table):
    result = runner.invoke(app, ["draft", "advise", str(table)], input="Kestrel\nOrebindr\nOrebinder\n")
    assert result.exit_code == 0, result.output
    assert "did you mean Orebinder" in result.output
    assert "final lineup: P(team 0 wins)" in result.output
    lineup = open_table(table)
    want = float(lineup.values[lineup.space.index([[[10], [14]]])[0]])
    assert f"{want:.3f}" in result.output.splitlines()[-1]


def test_simulate_reports_the_drafting_win_rate_with_an_interval(run1v1, table):
    result = runner.invoke(
        app, ["draft", "simulate", f"{run1v1.path}@3", "--table", str(table), "--games", "4", "--batch", "4",
              "--against", "greedy", "--json"]
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout)
    assert r["games"] == 4 and r["wins"] + r["losses"] + r["draws"] == 4
    lo, hi = r["drafting_win_rate_ci95"]
    assert 0 <= lo <= r["drafting_win_rate"] <= hi <= 1
    assert 0 < r["predicted_win_rate"] < 1


def test_simulate_refuses_a_table_of_another_game(tmp_path, run2v2, table):
    result = runner.invoke(app, ["draft", "simulate", f"{run2v2.path}@3", "--table", str(table), "--games", "2"])
    assert result.exit_code == 2 and "table of a 1v1 game" in result.stderr


def test_calibrate_writes_brier_scores_and_a_reliability_png(tmp_path, run1v1):
    plot = tmp_path / "rel.png"
    result = runner.invoke(
        app, ["draft", "calibrate", f"{run1v1.path}@3", "--games", "6", "--batch", "6", "--plot", str(plot),
              "--json"]
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout)
    assert r["games"] == 6 and sum(b["games"] for b in r["bins"]) == 6
    assert 0 <= r["brier"] <= 1 and 0 <= r["base_rate_brier"] <= 0.25
    assert sum(h["games"] for h in r["heroes"]) == 12  # two heroes per game
    assert all(0 <= h["observed"] <= 1 and 0 < h["predicted"] < 1 for h in r["heroes"])
    assert r["hero_spread_chance"] > 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = runner.invoke(app, ["draft", "calibrate", f"{run1v1.path}@3", "--plot", str(tmp_path / "rel.jpg")])
    assert bad.exit_code == 2 and not (tmp_path / "rel.jpg").exists()


@pytest.mark.parametrize("command", ["precompute", "simulate", "calibrate"])
def test_a_model_without_the_enemy_lineup_is_refused(tmp_path, run_v2, table, command):
    extra = {"precompute": ["--out", str(tmp_path / "v2.zarr")], "simulate": ["--table", str(table)], "calibrate": []}
    result = runner.invoke(app, ["draft", command, f"{run_v2.path}@3", *extra[command]])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert "model without the enemy lineup in its schema" in result.stderr and "surgery add-obs" in result.stderr
    assert not (tmp_path / "v2.zarr").exists()
