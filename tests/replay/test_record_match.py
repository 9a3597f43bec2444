"""``evaluate match --record DIR``: one replay per game, agents by team, a policy's predictions from the forward
pass that chose its actions (no extra pass), and games that re-simulate exactly."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import typer
from typer.testing import CliRunner

from fivectl.cli.evaluate import app as evaluate_app
from fivectl.config import GameConfig
from fivectl.evaluate import play_match
from fivectl.replay import load_replay
from fivectl.replay.verify import verify_replay
from fivectl.store.replay import list_replays

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "evaluate"))
from test_policy_agent import tiny_agent  # noqa: E402

GAME = GameConfig(team_size=1, lanes=1, time_limit_s=15.0)
REPO = Path(__file__).resolve().parents[2]


def test_a_recorded_match_has_one_replay_per_game_with_the_agents_by_team(tmp_path):
    result = play_match("random", "bot:easy", GAME, 3, seed=4, batch=2, record=tmp_path)
    files = list_replays(tmp_path)
    assert len(files) == 3
    winners = []
    for i, path in enumerate(files):
        replay = load_replay(path)
        assert replay.header["game_in_match"] == i
        assert replay.header["agents"] == (["random", "bot:easy"] if i % 2 == 0 else ["bot:easy", "random"])
        assert np.isnan(replay.arrays["win_prob"]).all()  # no policy played
        winners.append(replay.result["winner"])
    assert verify_replay(load_replay(files[2])).ok  # the third game started in a slot another had used
    outcomes = [1 if w == i % 2 else -1 if w == 1 - i % 2 else 0 for i, w in enumerate(winners)]
    assert outcomes == result.outcomes


def test_a_policy_s_predictions_are_recorded_without_an_extra_forward_pass(tmp_path):
    def count_forward_passes(record: Path | None) -> int:
        agent = tiny_agent(1, decide_every=2)
        calls = []
        act = agent.net.act
        agent.net.act = lambda *a, **k: calls.append(1) or act(*a, **k)
        play_match(agent, "bot:easy", GAME, 2, seed=1, batch=2, record=record)
        return len(calls)

    assert count_forward_passes(tmp_path / "rec") == count_forward_passes(None)
    replay = load_replay(list_replays(tmp_path / "rec")[1])  # game 1: the policy on team 1
    wp, objectives = replay.arrays["win_prob"][:-1], replay.arrays["objectives"][:-1]
    assert np.isnan(wp[:, 0]).all()  # the bot's hero
    assert not np.isnan(wp[:, 1]).any() and ((wp[:, 1] > 0) & (wp[:, 1] < 1)).all()
    np.testing.assert_array_equal(wp[1::2, 1], wp[0::2, 1][: len(wp[1::2])])  # held steps keep the last one
    names = replay.header["objectives"]
    assert not np.isnan(objectives[:, 1, names.index("tower_t1")]).any()
    assert np.isnan(objectives[:, 1, names.index("boss")]).all()  # not among the model's objectives
    assert verify_replay(replay).ok


def test_evaluate_match_record_cli(tmp_path):
    cli = typer.Typer()
    cli.add_typer(evaluate_app, name="evaluate")
    args = [
        "evaluate",
        "match",
        "random",
        "bot:passive",
        "--games",
        "2",
        "--json",
        "--record",
        str(tmp_path / "r"),
    ]
    recipe = ["--recipe", str(REPO / "recipes" / "quickstart.toml"), "--set", "game.time_limit_s=10"]
    result = CliRunner().invoke(cli, args + recipe)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["games"] == 2
    assert len(list_replays(tmp_path / "r")) == 2
