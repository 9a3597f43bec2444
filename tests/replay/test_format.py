"""A recorded game read back: header, every step's action, the predictions in force, the final frame, and a game
re-simulated from its random start state and actions (``replay verify``)."""

from __future__ import annotations

import dataclasses

import numpy as np
from replay_helpers import GAME, GAMES, record_games

from fivectl.replay import load_replay
from fivectl.replay.verify import verify_replay
from fivectl.sim import OBJECTIVES
from fivectl.store.replay import FORMAT_VERSION, NO_ACTION, STATE_COLUMNS, list_replays


def test_a_recorded_game_reads_back_as_it_was_played(recorded):
    assert [p.name for p in list_replays(recorded.directory)] == [p.name for p in recorded.files]
    assert len(recorded.files) == GAMES
    for i, path in enumerate(recorded.files):
        replay = load_replay(path)
        header = replay.header
        assert header["format_version"] == FORMAT_VERSION
        assert header["agents"] == ["random", "random"]
        assert header["game"] == dataclasses.asdict(GAME)
        assert header["schema_version"] == 2
        assert header["objectives"] == list(OBJECTIVES)
        assert len(header["lineup"]) == 2
        steps = len(recorded.actions[i])
        assert replay.steps == steps == replay.result["steps"]
        assert replay.result["winner"] == recorded.winners[i]
        # the first frame, every action, and the last prediction made at or before each step
        for name in STATE_COLUMNS:
            np.testing.assert_array_equal(
                replay.arrays[name][0], recorded.first_frames[i][name], err_msg=name
            )
        np.testing.assert_array_equal(replay.arrays["action"][:-1], recorded.actions[i])
        np.testing.assert_array_equal(replay.arrays["win_prob"][:-1], recorded.win_prob[i])
        # the final frame: the game's last tick, no action after it, no prediction on it
        fps, limit = GAME.fps, GAME.time_limit_s
        assert replay.arrays["tick"][-1] == int(limit * fps) == round(replay.result["seconds"] * fps)
        assert (replay.arrays["action"][-1] == NO_ACTION).all()
        assert np.isnan(replay.arrays["win_prob"][-1]).all()
        assert replay.arrays["tick"][-2] < replay.arrays["tick"][-1]


def test_held_steps_carry_the_last_prediction_and_objectives_land_in_their_columns(recorded):
    replay = load_replay(recorded.files[0])
    wp = replay.arrays["win_prob"][:-1]
    assert not np.isnan(wp[0]).any()  # the first step of the session predicted
    np.testing.assert_array_equal(wp[1], wp[0])  # the odd step did not: carried over
    assert not np.array_equal(wp[2], wp[1])
    objectives = replay.arrays["objectives"][0]
    assert (objectives[:, 0] == 0.25).all()
    assert np.isnan(objectives[:, 1]).all()  # a column no policy predicted


def test_replays_re_simulate_exactly_including_a_slot_s_second_game(recorded):
    for path in (recorded.files[0], recorded.files[-1]):  # the last one started where another game had ended
        replay = load_replay(path)
        result = verify_replay(replay)
        assert result.ok, result.message
        assert result.steps_checked == replay.steps


def test_verify_finds_a_frame_that_differs(recorded):
    replay = load_replay(recorded.files[1])
    replay.arrays["hp"][17, 0] += 1.0
    result = verify_replay(replay)
    assert not result.ok
    assert "step 17" in result.message and "'hp'" in result.message
    replay = load_replay(recorded.files[1])
    replay.arrays["tick"] = replay.arrays["tick"].copy()
    replay.arrays["x"][-1, 0] += 5.0  # the final frame is checked too
    assert not verify_replay(replay).ok


def test_games_recorded_under_an_environment_change_verify_with_their_variant(tmp_path):
    """A game recorded while a change was annealed in (``fivectl anneal``) re-draws its variant from the header's
    change and fraction; without them the re-simulation departs from the recording."""
    recorded = record_games(tmp_path, seed=7, change=("canary-mirror", 0.5))
    replays = [load_replay(path) for path in recorded.files]
    variants = [r.header["variant"] for r in replays]
    assert all(r.header["change"] == "canary-mirror" and r.header["change_fraction"] == 0.5 for r in replays)
    assert True in variants and False in variants, variants
    for replay in replays:
        result = verify_replay(replay)
        assert result.ok, result.message
    mirrored = replays[variants.index(True)]
    mirrored.header["change"] = None  # as if recorded without the change
    assert not verify_replay(mirrored).ok
