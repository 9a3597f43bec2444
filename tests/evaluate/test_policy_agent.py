"""A checkpoint policy acting in some games of a batch only (``act_rows``): the same actions as acting in all of
them, and the other games' LSTM state is left as it was."""

from __future__ import annotations

import numpy as np
import torch

from fivectl.config.model import ModelConfig
from fivectl.evaluate.policy_agent import PolicyAgent
from fivectl.model import PolicyNet
from fivectl.model.synthetic import random_obs
from fivectl.schema import load_schema
from fivectl.sim import HOLD

TINY = dict(unit_embed=8, unit_hidden=8, cat_embed=4, grid_channels=2, fc_size=16, lstm_size=16,
            attention_size=8, aux_hidden=8)  # fmt: skip


def tiny_agent(team_size: int, decide_every: int = 1) -> PolicyAgent:
    """A PolicyAgent around an untrained tiny network (no run directory needed)."""
    schema = load_schema(1)
    torch.manual_seed(0)
    agent = PolicyAgent.__new__(PolicyAgent)
    agent.spec, agent.team_size, agent.schema_version, agent.deterministic = "tiny@0", team_size, 1, True
    cfg = ModelConfig(schema_version=1, decide_every=decide_every, **TINY)
    agent.net = PolicyNet(schema, cfg, team_size).eval()
    return agent


def observations(games: int, team_size: int, seed: int) -> dict[str, np.ndarray]:
    obs = random_obs(load_schema(1), (games, 2 * team_size), torch.Generator().manual_seed(seed))
    return {key: value.numpy() for key, value in obs.items()}


def test_acting_in_some_games_matches_acting_in_all_and_keeps_the_others_state():
    k, games = 2, 4
    everywhere, some = tiny_agent(k), tiny_agent(k)
    everywhere.reset(games)
    some.reset(games)
    team = np.array([0, 1, 1, 0])
    rows = np.array([0, 2])
    first = np.ones(games, dtype=bool)
    for step in range(3):
        obs = observations(games, k, seed=step)
        all_actions = everywhere.act(None, obs, team, first)
        np.testing.assert_array_equal(some.act_rows(None, obs, team, first, rows), all_actions[rows])
        first = np.zeros(games, dtype=bool)
    heroes = (rows[:, None] * k + np.arange(k)).ravel()
    others = np.setdiff1d(np.arange(games * k), heroes)
    for mine, reference in zip(some.state, everywhere.state, strict=True):
        torch.testing.assert_close(mine[:, heroes], reference[:, heroes])
        assert not mine[:, others].any()  # never played: still the initial (zero) state
        assert reference[:, others].any()


def test_a_policy_deciding_every_third_step_holds_in_between_and_counts_from_each_game_start():
    k, games = 1, 3
    agent, reference = tiny_agent(k, decide_every=3), tiny_agent(k)
    agent.reset(games)
    reference.reset(games)
    team = np.array([0, 1, 0])
    first = np.ones(games, dtype=bool)
    decided = []
    for step in range(7):
        if step == 4:
            first = np.array([False, True, False])  # game 1 restarts: it decides now, then every third step
        obs = observations(games, k, seed=step)
        reference.state = tuple(s.clone() for s in agent.state)
        actions = agent.act(None, obs, team, first)
        rows = np.flatnonzero(actions[:, 0, 0] != HOLD)
        decided.append(rows.tolist())
        # a decision is what the network chooses from the LSTM state the game's earlier decisions left
        np.testing.assert_array_equal(actions[rows], reference.act_rows(None, obs, team, first, rows))
        torch.testing.assert_close(agent.state[0], reference.state[0])
        first = np.zeros(games, dtype=bool)
    assert decided == [[0, 1, 2], [], [], [0, 1, 2], [1], [], [0, 2]]
