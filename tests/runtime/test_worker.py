"""A rollout worker whose policy decides every few steps (``model.decide_every``): one sample per decision, the
game time and rewards of every env step in between."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fivectl.config import load_recipe
from fivectl.model import PolicyNet
from fivectl.model.synthetic import random_obs
from fivectl.model.traced import TracedActor
from fivectl.runtime.acting import ROW_BUCKET, act_on_rows
from fivectl.runtime.buffers import FragmentSlots, recipe_fragment_specs
from fivectl.runtime.params import ParameterStore
from fivectl.runtime.worker import RolloutWorker
from fivectl.schema import load_schema
from fivectl.sim import COMPONENT_INDEX, HOLD

QUICKSTART = "recipes/quickstart.toml"
STEPS = 48  # decisions per fragment (a multiple of train.bptt)
GAME_STEPS = 30  # env steps (of 4 frames at 30 fps) in a 4-second game


def make_worker(decide_every: int, bot_fraction: float = 0.0, games: int = 4):
    recipe = load_recipe(
        QUICKSTART,
        [
            "game.time_limit_s=4",
            f"train.games_per_worker={games}",
            "train.game_phases=1",
            f"train.fragment_length={STEPS}",
            f"selfplay.bot_fraction={bot_fraction}",
            f"model.decide_every={decide_every}",
        ],
    )
    schema = load_schema(recipe.model.schema_version)
    net = PolicyNet(schema, recipe.model, recipe.game.team_size)
    params = ParameterStore.for_model(net, shared=False)
    params.publish(net, 0, team_spirit=0.0, bot_fraction=bot_fraction)
    worker = RolloutWorker(recipe, schema, params, seed=3)
    views = FragmentSlots(recipe_fragment_specs(recipe, schema), 1, shared=False).slots[0]
    return worker, views


@pytest.mark.parametrize("decide_every", [1, 2])
def test_a_sample_covers_decide_every_env_steps(decide_every):
    worker, views = make_worker(decide_every)
    worker.fill(views)
    per_game = GAME_STEPS // decide_every  # decisions in a game
    done = views["done"].reshape(STEPS, 4, 2)[:, :, 0]
    ends = [t for t in range(STEPS) if (t + 1) % per_game == 0]
    assert all(np.flatnonzero(done[:, g]).tolist() == ends for g in range(4))
    assert views["game_seconds"][ends] == pytest.approx(np.full((len(ends), 4), 4.0), abs=1e-3)
    win = views["components"].reshape(STEPS, 8, -1)[..., COMPONENT_INDEX["win"]]
    assert np.abs(win[~done.repeat(2, axis=1)]).sum() == 0  # the win/loss lands on the game's last sample
    # every held env step runs the clock: the games now running are (STEPS - last end) decisions old
    assert worker.env.state.tick.tolist() == [(STEPS - 1 - ends[-1]) * decide_every * 4] * 4


def test_held_steps_add_their_rewards_and_the_bots_act_on_every_env_step():
    worker, views = make_worker(2, bot_fraction=1.0)
    bot_calls, env_steps = [], []
    act_bots, env_step = worker.opponents.act_bots, worker.env.step
    # the policy's side of each game (1v1: team 0 or 1), drawn anew for every game
    worker.opponents.act_bots = lambda *args: bot_calls.append(worker.opponents.learner_side.copy()) or act_bots(*args)

    def recording_step(actions, masks_only=False):
        result = env_step(actions, masks_only)
        env_steps.append((actions.copy(), result[1].copy(), result[2].copy(), masks_only))
        return result

    worker.env.step = recording_step
    worker.fill(views)
    assert (worker.opponents.opponent < -1).all()  # every game against a scripted bot
    assert len(bot_calls) == len(env_steps) == 2 * STEPS
    for t in range(STEPS):
        learner_rows = bot_calls[2 * t + 1]
        (decision, first_rewards, ended, lean), (held, second_rewards, _, full) = env_steps[2 * t : 2 * t + 2]
        assert lean and not full  # only the policy's step encodes the whole observation
        assert (decision[np.arange(4), bot_calls[2 * t], 0] != HOLD).all()  # the policy decides on the first
        assert (held[np.arange(4), learner_rows, 0] == HOLD).all()  # and holds on the second
        assert (held[np.arange(4), 1 - learner_rows, 0] != HOLD).all()  # the bot still acts
        expected = first_rewards + np.where(ended[:, None, None], 0.0, second_rewards)
        np.testing.assert_allclose(views["components"][t].reshape(4, 2, -1), expected, atol=1e-6)


def test_the_latest_network_acts_only_for_the_agents_it_plays():
    """Against bots, the worker's forward pass leaves the bots' rows out: its batch sizes are whole buckets of
    teams, the bots' rows get no outputs, and the trained rows get the network's log-probabilities."""
    worker, views = make_worker(2, bot_fraction=0.5, games=16)
    worker.fill(views)
    trained = views["train"].astype(bool)
    assert 0 < (~trained).sum() and trained.any()
    assert np.all(views["logprob"][~trained] == 0) and np.all(views["value"][~trained] == 0)
    assert np.all(views["logprob"][trained] < 0)
    sizes = {key[0] for key in worker.actor.graphs}
    assert sizes and all(size % ROW_BUCKET == 0 or size == worker.agents for size in sizes)
    assert min(sizes) < worker.agents


def test_acting_on_some_rows_gives_those_rows_what_acting_on_all_gives():
    recipe = load_recipe(QUICKSTART, [])
    schema = load_schema(recipe.model.schema_version)
    torch.manual_seed(1)
    net = PolicyNet(schema, recipe.model, recipe.game.team_size)
    agents = 20
    obs = random_obs(schema, (agents,), torch.Generator().manual_seed(2))
    state = tuple(torch.randn(1, agents, recipe.model.lstm_size) for _ in range(2))
    first = torch.zeros(agents, dtype=torch.bool)
    first[3] = True
    rows = np.array([0, 3, 4, 9, 10, 11, 17, 19, 13, 2, 1])  # 11 rows: padded to 16
    rows.sort()
    full = net.act(obs, state, first, with_aux=True)
    some = act_on_rows(TracedActor(net), obs, state, first, rows=rows, team_size=1, with_aux=True)
    others = np.setdiff1d(np.arange(agents), rows)
    pairs = [(some.value, full.value), (some.win_prob, full.win_prob)]
    pairs += [(some.aux[name], full.aux[name]) for name in full.aux]
    pairs += [(new[0], want[0]) for new, want in zip(some.state, full.state, strict=True)]
    for got, want in pairs:
        torch.testing.assert_close(got[rows], want[rows], rtol=1e-5, atol=1e-6)
    assert torch.all(some.value[others] == 0) and torch.all(some.actions[others] == 0)
    for new, old in zip(some.state, state, strict=True):
        assert torch.equal(new[:, others], old[:, others])  # the rows left out keep their state


def test_the_worker_shapes_rewards_with_the_published_lane_penalty():
    """The lane penalty is a schedule: the worker weighs its games' off-lane seconds at the value the learner
    published, not at the recipe's start."""
    rewards = []
    for published in (0.0, -1.0):
        worker, views = make_worker(1)
        worker.params.publish(worker.net, 1, team_spirit=0.0, off_lane=published)
        worker.fill(views)
        assert worker.off_lane == published
        rewards.append((views["reward"].copy(), views["components"].copy()))
    (free, components_free), (charged, components_charged) = rewards
    np.testing.assert_array_equal(components_free, components_charged)  # the same games, the same actions
    off_lane = components_free[..., COMPONENT_INDEX["off_lane"]]
    assert off_lane.any()  # the heroes start in their base, off the lane
    assert not np.allclose(free, charged)
    steps_without = ~off_lane.reshape(STEPS, 4, 2).any(axis=-1)  # no hero of the game off its lane
    np.testing.assert_allclose(free.reshape(STEPS, 4, 2)[steps_without], charged.reshape(STEPS, 4, 2)[steps_without])
