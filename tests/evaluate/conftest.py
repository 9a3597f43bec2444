"""Fixtures: a tiny batched game with the ``MobaEnv`` interface, to test agents and the match runner without the simulator.

Each game lasts a known number of steps; the team whose heroes chose ``attack`` (primary 2) on more hero-steps
wins (equal counts: a draw). Masks are random each step, so an agent that ignores them is caught.
"""

from __future__ import annotations

import numpy as np
import pytest

from fivectl.config import GameConfig
from fivectl.schema import ObsSchema
from fivectl.schema.spec import schema_from_dict
from fivectl.sim import REWARD_COMPONENTS

ATTACK = 2

SCHEMA = schema_from_dict(
    {
        "version": 1,
        "action": {
            "primary": ["noop", "move", "attack", "a1", "a2", "a3", "a4", "item"],
            "target_type": ["none", "point", "unit", "dynamic", "dynamic", "dynamic", "dynamic", "none"],
        },
        "groups": [
            {"name": "heroes", "kind": "unitset", "count": 4, "targetable": True, "fields": [{"name": "hp"}]},
            {"name": "creeps", "kind": "unitset", "count": 6, "targetable": True, "fields": [{"name": "hp"}]},
        ],
    },
    source="test schema",
)


class FakeEnv:
    def __init__(self, game_cfg: GameConfig, num_games: int, seed: int, schema: ObsSchema):
        self.num_games, self.team_size, self.schema = num_games, game_cfg.team_size, schema
        self.agents_per_game = 2 * self.team_size
        self.rng = np.random.default_rng(seed)
        self.games_started = 0
        self.length = np.zeros(num_games, dtype=np.int64)
        self.t = np.zeros(num_games, dtype=np.int64)
        self.attacks = np.zeros((num_games, 2))
        self.masks: dict[str, np.ndarray] = {}

    def reset(self) -> dict[str, np.ndarray]:
        for g in range(self.num_games):
            self._new_game(g)
        return self._observe()

    def _new_game(self, g: int) -> None:
        self.length[g] = 3 + self.games_started % 4
        self.games_started += 1
        self.t[g] = 0
        self.attacks[g] = 0

    def _observe(self) -> dict[str, np.ndarray]:
        g, a = self.num_games, self.agents_per_game
        spec = self.schema.action
        n_targets = self.schema.n_targets
        action_mask = self.rng.random((g, a, spec.n_primary)) < 0.5
        action_mask[..., 0] = True  # noop is always available
        action_mask[..., ATTACK] = True
        target_mask = self.rng.random((g, a, spec.n_primary, n_targets)) < 0.2
        target_mask[..., ATTACK, 0] = True
        param_mask = np.zeros((g, a, spec.n_primary, 2), dtype=bool)
        param_mask[..., ATTACK, 0] = True  # attack takes a unit
        param_mask[..., 1, 1] = True  # move takes an offset
        param_mask[..., 3:7, :] = self.rng.random((g, a, 4, 2)) < 0.5  # abilities: per hero
        self.masks = {"action_mask": action_mask, "target_mask": target_mask, "param_mask": param_mask}
        return dict(self.masks)

    def _invalid(self, actions: np.ndarray) -> np.ndarray:
        primary, target = actions[..., 0], actions[..., 2]
        take = lambda m, i: np.take_along_axis(m, i[..., None], axis=2)[..., 0]  # noqa: E731
        allowed = take(self.masks["action_mask"], primary)
        uses_target = np.take_along_axis(self.masks["param_mask"], primary[..., None, None], axis=2)[
            :, :, 0, 0
        ]
        targets = np.take_along_axis(self.masks["target_mask"], primary[..., None, None], axis=2)[:, :, 0]
        target_ok = take(targets, target)
        in_range = (
            (actions[..., 1] >= 0) & (actions[..., 1] < 4) & (actions[..., 3] >= 0) & (actions[..., 3] < 81)
        )
        return ~allowed | (uses_target & ~target_ok) | ~in_range

    def step(self, actions: np.ndarray):
        assert actions.shape == (self.num_games, self.agents_per_game, 4) and actions.dtype == np.int32
        invalid = self._invalid(actions)
        attacking = (actions[..., 0] == ATTACK) & ~invalid
        self.attacks += attacking.reshape(self.num_games, 2, self.team_size).sum(axis=2)
        rewards = np.zeros((self.num_games, self.agents_per_game, len(REWARD_COMPONENTS)), dtype=np.float32)
        self.t += 1
        done = self.t >= self.length
        winner = np.full(self.num_games, -1, dtype=np.int8)  # running or draw
        winner[done & (self.attacks[:, 0] > self.attacks[:, 1])] = 0
        winner[done & (self.attacks[:, 1] > self.attacks[:, 0])] = 1
        towers = np.zeros((self.num_games, 2))
        towers[np.arange(self.num_games)[winner >= 0], winner[winner >= 0]] = 1
        info = {
            "winner": winner,
            "game_time": (self.t * 4 / 30).astype(np.float32),
            "invalid_actions": invalid.astype(np.int64),
            "kills": self.attacks.copy(),  # per team, this game so far: one kill per attacking hero-step
            "towers_destroyed": towers,
            "last_hits": 2 * self.attacks,
            "denies": np.zeros((self.num_games, 2)),
        }
        for g in np.flatnonzero(done):
            self._new_game(g)
        return self._observe(), rewards, done, info


@pytest.fixture
def fake_env():
    """The class: pass it as ``make_env`` to ``play_match`` (with ``schema=SCHEMA``)."""
    return FakeEnv


@pytest.fixture
def fake_schema() -> ObsSchema:
    return SCHEMA
