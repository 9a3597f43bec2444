import numpy as np
import pytest

from fivectl.config.game import GameConfig
from fivectl.schema import load_schema
from fivectl.sim import MobaEnv
from fivectl.sim import data as D


@pytest.fixture(scope="session")
def schema():
    return load_schema(1)


def make_env(schema, num_games=1, seed=0, **game):
    """A deterministic 1v1 test game unless told otherwise (no randomization, so scenarios are repeatable)."""
    cfg = dict(
        team_size=1,
        lanes=1,
        randomize_initial_state=False,
        randomize_lineup=False,
        randomize_items=False,
        randomize_lanes=False,
        randomize_boss_health=False,
    )
    cfg.update(game)
    env = MobaEnv(GameConfig(**cfg), num_games, seed, schema)
    env.reset()
    return env


def place(env, u, x, y, g=0):
    env.state.x[g, u] = x
    env.state.y[g, u] = y


def noop(env):
    return np.zeros((env.num_games, env.agents_per_game, 4), np.int32)


def slot_of(env, agent, unit, g=0):
    slots = np.flatnonzero(env.state.slot_unit[g, agent] == unit)
    assert slots.size == 1, f"unit {unit} is not in agent {agent}'s target slots"
    return int(slots[0])


def enemy_creep(env, team, g=0):
    s = env.state
    for u in range(env.layout.creep_start, env.layout.n_units):
        if s.alive[g, u] and s.team[g, u] == team and s.utype[g, u] in (D.UT_MELEE, D.UT_RANGED):
            return u
    raise AssertionError("no creep")
