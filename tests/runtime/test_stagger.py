"""Workers spread their games' start times so that learner batches mix all moments of a game."""

import numpy as np
import pytest

from fivectl.config import load_recipe
from fivectl.model import PolicyNet
from fivectl.runtime.buffers import FragmentSlots, recipe_fragment_specs
from fivectl.runtime.params import ParameterStore
from fivectl.runtime.stagger import game_ages, game_steps, stagger_game_starts
from fivectl.runtime.worker import RolloutWorker
from fivectl.schema import load_schema
from fivectl.sim import MobaEnv

QUICKSTART = "recipes/quickstart.toml"


def test_game_ages_are_groups_evenly_spread_over_one_game():
    ages = game_ages(8, 4, 100, np.random.default_rng(0))
    shift = ages[0]
    assert 0 <= shift < 25
    assert ages.tolist() == [shift + 25 * (i // 2) for i in range(8)]
    assert ages.max() < 100


@pytest.mark.parametrize(("games", "phases"), [(4, 1), (1, 8)])
def test_one_phase_or_one_game_starts_everything_together(games, phases):
    assert game_ages(games, phases, 100, np.random.default_rng(0)).tolist() == [0] * games


def test_more_phases_than_games_gives_each_game_its_own():
    ages = game_ages(3, 8, 90, np.random.default_rng(1))
    assert len(set(ages.tolist())) == 3 and np.all(np.diff(ages) == 30)


def short_game_env(games: int, time_limit_s: float = 8.0) -> MobaEnv:
    recipe = load_recipe(QUICKSTART, [f"game.time_limit_s={time_limit_s}"])
    env = MobaEnv(recipe.game, games, 0, load_schema(recipe.model.schema_version))
    env.reset()
    return env


def test_staggered_games_are_as_old_as_their_ages_and_then_end_apart():
    env = short_game_env(4)
    steps = game_steps(env)
    assert steps == 60  # 8 s at 30 fps, 4 frames a decision
    obs, joined = stagger_game_starts(env, env.observe(), 4, np.random.default_rng(3))
    ages = env.state.tick // env.params.frameskip
    assert sorted(set(ages.tolist())) == ages.tolist() and np.all(np.diff(ages) == 15)  # one phase per game
    assert joined.tolist() == (ages > 0).tolist()
    assert set(obs) == set(env.observe())
    end_step = np.full(4, -1)
    for step in range(steps):
        _, _, done, _ = env.step(np.zeros((4, 2, 4), np.int32))
        end_step[done & (end_step < 0)] = step
    assert (end_step >= 0).all() and len(set(end_step.tolist())) == 4  # the games no longer end together
    assert (end_step == steps - 1 - ages).all()


def test_a_worker_does_not_count_the_results_of_games_it_took_over_midway():
    recipe = load_recipe(
        QUICKSTART,
        [
            "game.time_limit_s=8",
            "train.games_per_worker=4",
            "train.game_phases=2",
            "train.fragment_length=160",  # every game ends more than once
            "selfplay.bot_fraction=0",
        ],
    )
    schema = load_schema(recipe.model.schema_version)
    net = PolicyNet(schema, recipe.model, recipe.game.team_size)
    params = ParameterStore.for_model(net, shared=False)
    params.publish(net, 0, team_spirit=0.0, bot_fraction=0.0)
    worker = RolloutWorker(recipe, schema, params, seed=5)
    joined = worker.joined_midway.copy()
    assert joined.any()
    step_game = worker.env.step

    def team_0_wins_every_game(actions, masks_only=False):  # 8-second games end in draws: give every game a winner to count
        obs, components, done, info = step_game(actions, masks_only)
        info["winner"] = np.where(done, 0, -1).astype(info["winner"].dtype)
        return obs, components, done, info

    worker.env.step = team_0_wins_every_game
    slots = FragmentSlots(recipe_fragment_specs(recipe, schema), 1, shared=False)
    views = slots.slots[0]
    worker.fill(views)
    done = views["done"].reshape(160, 4, 2)[:, :, 0]
    outcome = views["outcome"].reshape(160, 4, 2)
    first_end = done.argmax(axis=0)
    assert len(set(first_end.tolist())) == 2  # two phases
    for g in range(4):
        ends = np.flatnonzero(done[:, g])
        assert ends.size >= 2 and ends[0] == first_end[g]
        for t in ends:
            if t == ends[0] and joined[g]:  # taken over midway: no result, no game length, though team 0 won
                assert views["winner"][t, g] == -1 and views["game_seconds"][t, g] == 0
            else:  # played from its start by the policy: counted
                assert views["winner"][t, g] == 0 and views["game_seconds"][t, g] > 0
            assert outcome[t, g].tolist() == [1.0, 0.0]  # the win head still learns who won
    assert not worker.joined_midway.any()
