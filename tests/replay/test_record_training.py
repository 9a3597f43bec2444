"""``train.replay_every``: training keeps one game in N in the run's ``replays/``, with the learner's
predictions, capped by ``train.replay_keep_gb``; the replays re-simulate."""

from __future__ import annotations

import numpy as np
from typer.testing import CliRunner

from fivectl.cli.main import app
from fivectl.replay import load_replay
from fivectl.replay.verify import verify_replay
from fivectl.store.replay import list_replays


def test_training_records_one_game_in_n(tiny_recipe, tmp_path):
    run = tmp_path / "run"
    settings = [
        "--set",
        "game.time_limit_s=4",
        "--set",
        "train.replay_every=2",
        "--set",
        "train.game_phases=1",
    ]
    args = ["train", str(tiny_recipe), "--run", str(run), "--workers", "0", "--max-samples", "600", *settings]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    files = list_replays(run / "replays")
    # 2 games in a worker, 4 s each (30 steps): about 150 steps play 8 games, of which every other is kept
    assert 2 <= len(files) <= 5
    replay = load_replay(files[0])
    assert replay.header["agents"][0].endswith(f"@{replay.header['agent_versions'][0]}")
    assert replay.result["seconds"] == 4.0
    wp = replay.arrays["win_prob"][:-1]
    assert not np.isnan(wp).all() and ((wp[~np.isnan(wp)] > 0) & (wp[~np.isnan(wp)] < 1)).all()
    assert verify_replay(replay).ok
    assert not list(
        (run / "replays").glob("*.partial")
    )  # the games cut short at the end leave nothing behind
