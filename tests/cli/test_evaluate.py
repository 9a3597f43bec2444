"""``fivectl evaluate match`` through the CLI: JSON output on the real game, bad input exits 2 with one line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import typer
from rich.console import Console
from shared_helpers import assert_bad_input
from typer.testing import CliRunner

from fivectl.cli import evaluate as cli_evaluate
from fivectl.cli.evaluate import app as evaluate_app

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = str(REPO / "recipes" / "quickstart.toml")
runner = CliRunner()

# The sub-app alone, mounted as `evaluate` (cli/main.py mounts it the same way).
cli = typer.Typer()
cli.add_typer(evaluate_app, name="evaluate")


def invoke(*args: str):
    return runner.invoke(cli, ["evaluate", "match", *args])


def short_game(*args: str) -> list[str]:
    return [*args, "--recipe", QUICKSTART, "--set", "game.time_limit_s=20"]


def test_match_json_has_the_documented_keys():
    result = invoke(*short_game("random", "bot:passive", "--games", "4", "--seed", "3", "--json"))
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for key in ("a", "b", "games", "a_wins", "b_wins", "draws", "a_win_rate", "mean_game_seconds"):
        assert key in data, key
    for key in ("a_kills_mean", "b_kills_mean", "a_towers_mean", "b_towers_mean", "a_building_hp_mean"):
        assert key in data, key
    assert 0.0 <= data["a_building_hp_mean"] <= 6.0 and 0.0 <= data["b_building_hp_mean"] <= 6.0
    assert (data["a"], data["b"], data["games"]) == ("random", "bot:passive", 4)
    assert data["a_wins"] + data["b_wins"] + data["draws"] == 4
    lo, hi = data["a_win_rate_ci95"]
    assert 0.0 <= lo <= data["a_win_rate"] <= hi <= 1.0
    assert 0.0 < data["mean_game_seconds"] <= 20.0 + 1.0


def test_match_plays_on_one_torch_thread(monkeypatch):
    # Small per-step batches: extra torch threads only spin, and two evaluations (or one next to training)
    # slowed to a crawl on 2 cores. The command sets one thread before it plays.
    import torch

    threads = torch.get_num_threads()
    calls: list[int] = []
    monkeypatch.setattr(torch, "set_num_threads", calls.append)
    result = invoke(*short_game("random", "bot:passive", "--games", "2", "--json"))
    assert result.exit_code == 0, result.output
    assert calls == [1]
    assert torch.get_num_threads() == threads  # the test process itself is left as it was


def test_match_text_report():
    result = invoke(*short_game("random", "random", "--games", "2"))
    assert result.exit_code == 0, result.output
    assert "win rate" in result.stdout and "random" in result.stdout



def test_unknown_agent_is_bad_input_with_suggestion():
    assert_bad_input(invoke("random", "bot:meduim", "--games", "2"), "bot:meduim", "bot:medium")
    assert_bad_input(invoke("rnd", "random", "--games", "2"), "known agents")


def test_missing_recipe_is_bad_input(tmp_path):
    assert_bad_input(invoke("random", "random", "--recipe", str(tmp_path / "nope.toml")), "nope.toml")


def test_bad_game_count_is_bad_input():
    assert_bad_input(invoke("random", "random", "--games", "0"), "--games")
    assert runner.invoke(cli, ["evaluate", "match", "random", "random", "--games", "many"]).exit_code == 2


def test_impossible_game_section_is_bad_input():
    assert_bad_input(
        invoke("random", "random", "--recipe", QUICKSTART, "--set", "game.lanes=2"), "game.lanes"
    )


def terminal_stderr(monkeypatch) -> io.StringIO:
    """The command's stderr console, as if stderr were a terminal: what it draws lands in the returned buffer."""
    buffer = io.StringIO()
    monkeypatch.setattr(cli_evaluate, "err_console", Console(file=buffer, force_terminal=True, width=100))
    return buffer


def test_a_terminal_gets_a_progress_bar_of_games_and_json_stays_pure(monkeypatch):
    drawn = terminal_stderr(monkeypatch)
    result = invoke(*short_game("random", "bot:passive", "--games", "3"))
    assert result.exit_code == 0, result.output
    assert "games" in drawn.getvalue() and "3/3" in drawn.getvalue()  # the bar on stderr, games done / total
    assert "3/3" not in result.stdout
    drawn = terminal_stderr(monkeypatch)
    as_json = invoke(*short_game("random", "bot:passive", "--games", "3", "--json"))
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout)["games"] == 3  # nothing but JSON on stdout
    assert drawn.getvalue() == ""  # and no bar with --json


def test_no_bar_when_stderr_is_not_a_terminal():
    result = invoke(*short_game("random", "bot:passive", "--games", "2"))
    assert result.exit_code == 0 and "2/2" not in result.output
