"""Past-version opponents in a worker: assignment only at game starts, training masks, the network cache."""

from __future__ import annotations

import numpy as np

from fivectl.config import recipe_from_dict
from fivectl.runtime.opponents import LATEST, OpponentSet
from fivectl.schema import load_schema


def make_set(games=8, team_size=2, latest_fraction=0.0, cache_size=2):
    recipe = recipe_from_dict(
        {
            "game": {"team_size": team_size},
            "selfplay": {"latest_fraction": latest_fraction},
            "model": {"lstm_size": 4},
        }
    )
    return OpponentSet(recipe, load_schema(1), None, games, np.random.default_rng(0), cache_size=cache_size)


def test_only_starting_games_get_new_opponents_and_masks_follow_sides():
    ops = make_set()
    pool = (np.array([3, 7]), np.array([0.5, 0.5]))
    ops.assign(np.ones(8, bool), pool)
    assert set(ops.opponent.tolist()) <= {3, 7}
    before = ops.opponent.copy()
    starting = np.zeros(8, bool)
    starting[2] = True
    ops.assign(starting, (np.array([11]), np.array([1.0])))
    assert ops.opponent[2] == 11 and np.array_equal(np.delete(ops.opponent, 2), np.delete(before, 2))
    mask = ops.train_mask().reshape(8, 2, 2)  # [game, team, hero]
    for g in range(8):
        side = ops.learner_side[g]
        assert mask[g, side].all() and not mask[g, 1 - side].any()


def test_latest_games_train_both_teams_and_an_empty_pool_means_latest():
    ops = make_set(latest_fraction=0.0)
    ops.assign(np.ones(8, bool), (np.zeros(0, np.int64), np.zeros(0)))
    assert (ops.opponent == LATEST).all() and ops.train_mask().all()


def test_networks_in_use_are_never_evicted():
    ops = make_set(cache_size=1)
    ops.opponent[:] = [1, 2, 3, 3, 1, 2, 2, 1]
    ops.nets = {v: object() for v in (1, 2, 3, 9)}  # 9 is no longer played
    from collections import OrderedDict

    ops.nets = OrderedDict(ops.nets)
    ops.evict_unused()
    assert set(ops.nets) == {1, 2, 3}
