"""Past-version opponents in a worker: assignment only at game starts, training masks, the network cache."""

from __future__ import annotations

from collections import OrderedDict

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


def test_games_starting_together_share_few_past_versions_but_keep_the_pool_distribution():
    ops = make_set(games=8)
    versions, probs = np.array([1, 2, 3, 4]), np.array([0.1, 0.2, 0.3, 0.4])
    counts = np.zeros(5)
    for _ in range(2000):
        ops.assign(np.ones(8, bool), (versions, probs))
        assert np.unique(ops.opponent).size == 1  # past_versions_per_batch = 1: one network per batch
        counts[ops.opponent[0]] += 1
    assert np.allclose(counts[1:] / counts.sum(), probs, atol=0.03)


def test_past_versions_per_batch_zero_draws_every_game_independently():
    recipe = recipe_from_dict(
        {"selfplay": {"latest_fraction": 0.0, "past_versions_per_batch": 0}, "model": {"lstm_size": 4}}
    )
    ops = OpponentSet(recipe, load_schema(1), None, 64, np.random.default_rng(0))
    ops.assign(np.ones(64, bool), (np.arange(1, 9), np.full(8, 1 / 8)))
    assert np.unique(ops.opponent).size > 4


def test_past_games_together_share_the_choice_but_keep_the_latest_fraction():
    recipe = recipe_from_dict(
        {"selfplay": {"latest_fraction": 0.8, "past_games_together": True}, "model": {"lstm_size": 4}}
    )
    ops = OpponentSet(recipe, load_schema(1), None, 16, np.random.default_rng(0))
    past_batches = 0
    for _ in range(2000):
        ops.assign(np.ones(16, bool), (np.array([1, 2]), np.array([0.5, 0.5])))
        against_latest = ops.opponent == LATEST
        assert against_latest.all() or not against_latest.any()  # one choice for the whole batch
        past_batches += int(not against_latest.any())
    assert abs(past_batches / 2000 - 0.2) < 0.03


def test_bot_games_train_only_the_learner_side_and_the_bot_plays_the_other():
    import torch

    from fivectl.runtime.opponents import bot_code
    from fivectl.sim import BotMemory, MobaEnv, bot_actions

    recipe = recipe_from_dict(
        {
            "game": {"team_size": 1},
            "selfplay": {"bot_fraction": 1.0, "bots": ["bot:easy"]},
            "model": {"lstm_size": 4},
        }
    )
    games = 6
    ops = OpponentSet(recipe, load_schema(1), None, games, np.random.default_rng(0))
    ops.assign(np.ones(games, bool), (np.array([3]), np.array([1.0])))
    assert (ops.opponent == bot_code("easy")).all()
    mask = ops.train_mask().reshape(games, 2)
    assert (mask[np.arange(games), ops.learner_side]).all() and mask.sum() == games

    env = MobaEnv(recipe.game, games, 0, load_schema(1))
    obs = env.reset()
    for _ in range(40):  # walk into the lane so that the bot has things to do
        env.step(np.zeros((games, 2, 4), np.int32))
    obs = env.step(np.zeros((games, 2, 4), np.int32))[0]
    actions = torch.full((games * 2, 4), -7, dtype=torch.int64)
    ops.act_bots(env, obs, actions)
    side = 1 - ops.learner_side.astype(np.int64)
    expected = bot_actions(env, obs, side, "easy", BotMemory.empty(games, 1), None)[:, 0]
    got = actions.numpy().reshape(games, 2, 4)
    assert np.array_equal(got[np.arange(games), side], expected)
    assert (got[np.arange(games), ops.learner_side] == -7).all()  # the learner's rows are untouched


def test_selfplay_bots_are_validated():
    import pytest

    from fivectl.config.selfplay import SCRIPTED_BOTS
    from fivectl.errors import ConfigError
    from fivectl.sim import BOT_LEVELS

    assert SCRIPTED_BOTS == BOT_LEVELS
    with pytest.raises(ConfigError, match="unknown bot 'bot:hard'"):
        recipe_from_dict({"selfplay": {"bot_fraction": 0.2, "bots": ["bot:hard"]}})


def test_bot_fraction_follows_its_schedule_as_published():
    """The trainer evaluates `selfplay.bot_fraction` at its progress and publishes it with the parameters; the
    worker's opponent set draws bots with the published value, not the recipe's starting one."""
    from fivectl.rl.schedules import Progress, hyperparameters_at
    from fivectl.runtime.opponents import bot_code

    schedule = {"points": [[0, 0.0], [100, 0.0], [200, 1.0]], "unit": "versions"}
    recipe = recipe_from_dict(
        {"game": {"team_size": 1}, "selfplay": {"bot_fraction": schedule}, "model": {"lstm_size": 4}}
    )
    assert hyperparameters_at(recipe, Progress(versions=50)).bot_fraction == 0.0
    assert hyperparameters_at(recipe, Progress(versions=150)).bot_fraction == 0.5
    assert hyperparameters_at(recipe, Progress(versions=300)).bot_fraction == 1.0

    games = 64
    ops = OpponentSet(recipe, load_schema(1), None, games, np.random.default_rng(0))
    ops.assign(np.ones(games, bool), (np.array([], np.int64), np.array([])))
    assert (ops.opponent == LATEST).all()  # the schedule starts at 0
    ops.bot_fraction = 1.0  # what a worker sets from the published scalars
    ops.assign(np.ones(games, bool), (np.array([], np.int64), np.array([])))
    assert (ops.opponent == bot_code("easy")).all()


def test_bot_fraction_without_bots_is_rejected_even_when_scheduled():
    import pytest

    from fivectl.errors import ConfigError

    with pytest.raises(ConfigError, match="bot_fraction > 0"):
        recipe_from_dict({"selfplay": {"bot_fraction": {"points": [[0, 0.0], [10, 0.3]]}, "bots": []}})


def test_published_bot_fraction_reaches_the_worker_side():
    from fivectl.model.policy import PolicyNet
    from fivectl.runtime.params import ParameterStore

    recipe = recipe_from_dict({"game": {"team_size": 1}, "model": {"lstm_size": 4}})
    net = PolicyNet(load_schema(1), recipe.model, 1)
    params = ParameterStore.for_model(net, shared=False)
    params.publish(net, 3, team_spirit=0.0, bot_fraction=0.25)
    version, scalars = params.read_into(PolicyNet(load_schema(1), recipe.model, 1))
    params.close()
    assert version == 3 and scalars["bot_fraction"] == 0.25


def staggered_rounds(ops, pool, rounds: int, groups: int = 4):
    """Groups of games starting one after another, as a worker's staggered games do (train.game_phases)."""
    group = np.arange(ops.games) * groups // ops.games
    for turn in range(rounds * groups):
        starting = group == turn % groups
        ops.assign(starting, pool)
        yield turn, starting


def test_staggered_games_share_one_past_version_per_round_and_keep_the_pool_distribution():
    ops = make_set(games=8)
    versions, probs = np.array([1, 2, 3, 4]), np.array([0.1, 0.2, 0.3, 0.4])
    counts = np.zeros(5)
    for turn, starting in staggered_rounds(ops, (versions, probs), 3000):
        if turn % 4 == 0:  # a round's first group: the previous round's version is still playing elsewhere
            counts[ops.opponent[starting][0]] += 1
        assert np.unique(ops.opponent[starting]).size == 1
        if turn % 4 == 3:  # the round is complete: the whole worker plays its one past version
            assert np.unique(ops.opponent).size == 1
    assert np.allclose(counts[1:] / counts.sum(), probs, atol=0.03)


def test_staggered_games_share_the_latest_or_past_choice_per_round():
    recipe = recipe_from_dict(
        {"selfplay": {"latest_fraction": 0.8, "past_games_together": True}, "model": {"lstm_size": 4}}
    )
    ops = OpponentSet(recipe, load_schema(1), None, 16, np.random.default_rng(0))
    past_rounds = 0
    for turn, _ in staggered_rounds(ops, (np.array([1, 2]), np.array([0.5, 0.5])), 2000):
        if turn % 4 == 3:
            against_latest = ops.opponent == LATEST
            assert against_latest.all() or not against_latest.any()
            past_rounds += int(not against_latest.any())
    assert abs(past_rounds / 2000 - 0.2) < 0.03


def test_past_versions_act_through_traced_graphs_with_eager_acts_state_and_recycle_their_networks():
    """Each past version acts for its rows alone through its network's graphs: its rows' LSTM state is what
    eager ``act`` on those rows gives and the others' stays as it was. An evicted network is kept to load the
    next version into, its graphs with it."""
    import torch

    from fivectl.model.synthetic import random_obs

    ops = make_set(games=8, team_size=1)
    schema = load_schema(1)
    ops.opponent[:] = [3, 7, 3, LATEST, 7, 3, LATEST, 7]
    ops.learner_side[:] = [0, 1, 1, 0, 0, 1, 0, 1]
    ops.nets = OrderedDict()
    for seed, version in enumerate((3, 7)):
        torch.manual_seed(seed)
        ops.nets[version] = ops.new_actor()
    agents = 16
    obs = random_obs(schema, (agents,), torch.Generator().manual_seed(4))
    first = torch.zeros(agents, dtype=torch.bool)
    before = tuple(s.normal_() for s in ops.state)
    before = tuple(s.clone() for s in before)
    actions = torch.full((agents, 4), -1, dtype=torch.long)
    ops.act(obs, first, actions)
    played = np.zeros(agents, bool)
    for version, rows in ops.opponent_rows().items():
        actor, index = ops.nets[version], torch.from_numpy(rows)
        net = actor.net
        expected = net.act({k: v[index] for k, v in obs.items()}, tuple(s[:, index] for s in before), first[index])
        for got, want in zip(ops.state, expected.state, strict=True):
            torch.testing.assert_close(got[:, index], want, rtol=0, atol=1e-6)
        assert (actions[index] >= 0).all() and actor.graphs
        played[rows] = True
    assert played.sum() == 6  # one side of each of the six games against a past version
    for got, old in zip(ops.state, before, strict=True):
        assert torch.equal(got[:, ~played], old[:, ~played])
    assert (actions[~played] == -1).all()
    ops.opponent[:] = 3  # version 7 is no longer played: evicted to the spares, and its network reused
    ops.cache_size = 1
    evicted = ops.nets[7]
    ops.evict_unused()
    assert list(ops.nets) == [3] and ops.spare == [evicted]


def test_results_against_a_mix_of_bot_levels_are_kept_per_level_as_well():
    from fivectl.runtime.opponents import bot_code
    from fivectl.runtime.pool_upkeep import PoolUpkeep

    easy, passive = bot_code("easy"), bot_code("passive")
    fragment = {  # five ended games and one still running (game_seconds 0); the learner plays side 0
        "opponent": np.array([easy, easy, passive, passive, passive, easy]),
        "game_seconds": np.array([300.0, 300.0, 300.0, 300.0, 300.0, 0.0]),
        "winner": np.array([0, 1, 0, -1, 0, -1]),
        "learner_side": np.zeros(6, dtype=np.int64),
    }
    upkeep = PoolUpkeep(state=None, checkpoints=None)
    upkeep.record_results([fragment])
    assert sorted(upkeep.bot_results) == [0.0, 0.5, 1.0, 1.0, 1.0]
    assert list(upkeep.bot_results_by_level["easy"]) == [1.0, 0.0]
    assert list(upkeep.bot_results_by_level["passive"]) == [1.0, 0.5, 1.0]
