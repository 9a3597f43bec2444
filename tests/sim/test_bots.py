"""Scripted bots: only valid actions, and the behaviours that tell the levels apart."""

from __future__ import annotations

import numpy as np
import pytest

from fivectl.config import GameConfig
from fivectl.evaluate import play_match
from fivectl.schema import load_schema
from fivectl.sim import MobaEnv
from fivectl.sim import data as D
from fivectl.sim.bots import BOT_LEVELS, BotMemory, bot_actions


@pytest.fixture(scope="module")
def schema():
    return load_schema(1)


@pytest.mark.parametrize(
    ("a", "b", "cfg"),
    [
        ("bot:passive", "random", GameConfig(team_size=1, time_limit_s=60.0)),
        ("bot:easy", "bot:medium", GameConfig(team_size=1, time_limit_s=90.0)),
        ("bot:medium", "bot:easy", GameConfig(team_size=2, lanes=3, time_limit_s=60.0)),
    ],
)
def test_bots_never_take_invalid_actions(schema, a, b, cfg):
    r = play_match(a, b, cfg, games=2, seed=5, batch=2, schema=schema)
    assert r.games == 2
    if a.startswith("bot:"):
        assert r.a_invalid_action_rate == 0.0
    if b.startswith("bot:"):
        assert r.b_invalid_action_rate == 0.0


def make_env(schema, team_size=1, seed=0):
    env = MobaEnv(GameConfig(team_size=team_size, time_limit_s=300.0), num_games=1, seed=seed, schema=schema)
    obs = env.reset()
    noop = np.zeros((1, 2 * team_size, 4), dtype=np.int32)
    noop[..., 3] = 40
    for _ in range(40):  # 5 s of a live game: creeps on the lane, scripted items bought
        obs, _, _, _ = env.step(noop)
    return env, obs


def act(env, obs, level, memory, team=0):
    return bot_actions(env, obs, np.array([team]), level, memory, np.random.default_rng(0))[0, 0]


def test_easy_retreats_at_low_health_and_comes_back_when_healed(schema):
    env, obs = make_env(schema)
    memory = BotMemory.empty(1, 1)
    hero = 0
    env.state.x[0, hero], env.state.y[0, hero] = 5000.0, 5000.0  # mid lane, far from the fountain
    env.state.hp[0, hero] = 0.1 * env.state.max_hp[0, hero]
    obs = env._encode()
    action = act(env, obs, "easy", memory)
    assert memory.retreating[0, 0]
    primary = env.schema.action.primary[action[0]]
    assert primary in ("move", "item1", "item2", "item3")
    if primary == "move":  # towards team 0's fountain, down and left
        dx, dy = action[3] % 9 - 4, action[3] // 9 - 4
        assert dx < 0 and dy < 0
    env.state.hp[0, hero] = 0.5 * env.state.max_hp[0, hero]
    act(env, env._encode(), "easy", memory)
    assert memory.retreating[0, 0], "keeps retreating until healed (hysteresis)"
    env.state.hp[0, hero] = env.state.max_hp[0, hero]
    act(env, env._encode(), "easy", memory)
    assert not memory.retreating[0, 0]
    memory.retreating[0, 0] = True
    memory.forget(np.array([True]))
    assert not memory.retreating[0, 0]


def test_medium_stays_out_of_enemy_tower_range_without_creep_cover(schema):
    env, obs = make_env(schema)
    s = env.state
    tower = next(
        u
        for u in range(env.layout.bld_start, env.layout.bld_end)
        if s.team[0, u] == 1 and s.utype[0, u] == D.UT_TOWER and s.lane[0, u] == 0
    )
    # no creeps anywhere, team 0's hero just inside team 1's tier-1 tower range
    s.alive[0, env.layout.creep_start :] = 0
    s.x[0, 0], s.y[0, 0] = s.x[0, tower] - 500.0, s.y[0, tower] - 400.0
    s.hp[0, 0] = s.max_hp[0, 0]
    obs = env._encode()
    action = act(env, obs, "medium", BotMemory.empty(1, 1))
    assert env.schema.action.primary[action[0]] == "move"
    dx, dy = action[3] % 9 - 4, action[3] // 9 - 4
    assert dx <= 0 and dy <= 0 and (dx, dy) != (0, 0), "walks back towards its own base"


def test_medium_last_hits_more_than_easy(schema):
    cfg = GameConfig(team_size=1, time_limit_s=150.0)
    medium = play_match("bot:medium", "bot:passive", cfg, games=2, seed=11, batch=2, schema=schema)
    easy = play_match("bot:easy", "bot:passive", cfg, games=2, seed=11, batch=2, schema=schema)
    assert medium.a_last_hits_mean > easy.a_last_hits_mean


def test_bot_levels_are_the_registered_specs():
    from fivectl.evaluate import known_agent_specs

    assert [f"bot:{level}" for level in BOT_LEVELS] == [s for s in known_agent_specs() if s.startswith("bot:")]
