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

TINY = dict(unit_embed=8, unit_hidden=8, cat_embed=4, grid_channels=2, fc_size=16, lstm_size=16,
            attention_size=8, aux_hidden=8)  # fmt: skip


def tiny_agent(team_size: int) -> PolicyAgent:
    """A PolicyAgent around an untrained tiny network (no run directory needed)."""
    schema = load_schema(1)
    torch.manual_seed(0)
    agent = PolicyAgent.__new__(PolicyAgent)
    agent.spec, agent.team_size, agent.schema_version, agent.deterministic = "tiny@0", team_size, 1, True
    agent.net = PolicyNet(schema, ModelConfig(schema_version=1, **TINY), team_size).eval()
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
