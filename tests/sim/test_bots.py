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


def assert_valid(obs, team, actions, team_size, n_offset):
    """Every action is allowed by the masks of the observation it answered (the game's own validation, without
    the same-frame races: an enemy's stun landing first invalidates an action that was valid when chosen)."""
    games = np.arange(len(team))[:, None]
    rows = team[:, None] * team_size + np.arange(team_size)
    amask, tmask, pmask = (obs[k][games, rows] for k in ("action_mask", "target_mask", "param_mask"))
    primary, target, offset = actions[..., 0], actions[..., 2], actions[..., 3]
    pick = primary[..., None]
    assert np.take_along_axis(amask, pick, axis=2).all(), "primary action not in action_mask"
    uses_unit = np.take_along_axis(pmask[..., 0], pick, axis=2)[..., 0]
    targets = np.take_along_axis(tmask, pick[..., None], axis=2)[:, :, 0]
    target_ok = np.take_along_axis(targets, target[..., None], axis=2)[..., 0]
    assert (target_ok | ~uses_unit).all(), "unit target not in target_mask"
    assert ((offset >= 0) & (offset < n_offset)).all() and (actions[..., 1] == 0).all()


@pytest.mark.parametrize(
    ("level", "team_size", "lanes"), [(lv, 1, 1) for lv in BOT_LEVELS] + [("medium", 2, 3)]
)
def test_bots_only_choose_actions_the_masks_allow(schema, level, team_size, lanes):
    cfg = GameConfig(team_size=team_size, lanes=lanes, time_limit_s=45.0)
    env = MobaEnv(cfg, num_games=2, seed=3, schema=schema)
    obs = env.reset()
    team = np.array([0, 1])  # the bot plays both sides across the two games
    memory, rng = BotMemory.empty(2, team_size), np.random.default_rng(0)
    moves = 0
    for _ in range(int(45.0 * 7.5) + 5):
        mine = bot_actions(env, obs, team, level, memory, rng)
        assert_valid(obs, team, mine, team_size, schema.action.n_offset)
        moves += (mine[..., 0] != 0).sum()
        actions = env.sample_random_actions(rng)
        actions[np.arange(2)[:, None], team[:, None] * team_size + np.arange(team_size)] = mine
        obs, _, done, _ = env.step(actions)
        memory.forget(done)
    assert moves > 0, "the bot did something"


def test_bots_restricted_to_some_games_act_there_as_in_all_and_leave_the_rest(schema):
    env = MobaEnv(GameConfig(team_size=2, lanes=3, time_limit_s=60.0), num_games=4, seed=5, schema=schema)
    obs = env.reset()
    rng = np.random.default_rng(1)
    team = np.array([0, 1, 1, 0])
    played = np.array([True, False, True, False])
    memory_all, memory_some = BotMemory.empty(4, 2), BotMemory.empty(4, 2)
    acted = 0
    for _ in range(120):
        everywhere = bot_actions(env, obs, team, "easy", memory_all, rng)
        some = bot_actions(env, obs, team, "easy", memory_some, rng, games=played)
        np.testing.assert_array_equal(some[played], everywhere[played])
        assert not some[~played].any(), "games the bots do not play are left alone"
        np.testing.assert_array_equal(memory_some.retreating[played], memory_all.retreating[played])
        acted += int((some[played, :, 0] != 0).sum())
        obs, _, done, _ = env.step(env.sample_random_actions(rng))
        memory_all.forget(done)
        memory_some.forget(done)
    assert acted > 0


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


def test_medium_sieges_a_tower_its_creeps_tank_where_easy_hits_the_creep_in_range(schema):
    """The time-limit tiebreak counts building damage: medium walks up to an enemy tower that its creeps are
    tanking and hits it, instead of the full-health enemy creep next to it."""
    env, _ = make_env(schema)
    s, lay = env.state, env.layout
    tower = next(
        u
        for u in range(lay.bld_start, lay.bld_end)
        if s.team[0, u] == 1 and s.utype[0, u] == D.UT_TOWER and s.lane[0, u] == 0
    )
    back = np.array([-1.0, -1.0]) / np.sqrt(2.0)  # from team 1's mid tower towards team 0's base
    tower_xy = np.array([s.x[0, tower], s.y[0, tower]])
    s.x[0, 1], s.y[0, 1] = D.FOUNTAIN_POS[1]  # the enemy hero is far away
    s.alive[0, lay.creep_start :] = 0
    own = [u for u in range(lay.creep_start, lay.n_units) if s.team[0, u] == 0][:2]
    foe = next(u for u in range(lay.creep_start, lay.n_units) if s.team[0, u] == 1)
    hero_xy = tower_xy + back * (s.rng_[0, 0] + 300.0)  # out of attack range, a short walk away
    s.x[0, 0], s.y[0, 0] = hero_xy
    s.hp[0, 0] = s.max_hp[0, 0]
    for k, u in enumerate(own):  # tanking: inside the tower's range, its target
        s.alive[0, u] = 1
        s.x[0, u], s.y[0, u] = tower_xy + back * (250.0 + 60.0 * k)
        s.hp[0, u] = s.max_hp[0, u]
    s.target[0, tower] = own[0]
    s.alive[0, foe] = 1
    s.x[0, foe], s.y[0, foe] = hero_xy + back * 80.0
    s.hp[0, foe] = s.max_hp[0, foe]
    obs = env.observe()
    primary = env.schema.action.primary

    medium = act(env, obs, "medium", BotMemory.empty(1, 1))
    assert primary[medium[0]] == "attack" and s.slot_unit[0, 0, medium[2]] == tower
    easy = act(env, obs, "easy", BotMemory.empty(1, 1))
    assert primary[easy[0]] == "attack" and s.slot_unit[0, 0, easy[2]] == foe


def test_medium_last_hits_more_than_easy(schema):
    cfg = GameConfig(team_size=1, time_limit_s=150.0)
    medium = play_match("bot:medium", "bot:passive", cfg, games=2, seed=11, batch=2, schema=schema)
    easy = play_match("bot:easy", "bot:passive", cfg, games=2, seed=11, batch=2, schema=schema)
    assert medium.a_last_hits_mean > easy.a_last_hits_mean


def test_bot_levels_are_the_registered_specs():
    from fivectl.evaluate import known_agent_specs

    assert [f"bot:{level}" for level in BOT_LEVELS] == [
        s for s in known_agent_specs() if s.startswith("bot:")
    ]
