"""Facts behind the auxiliary heads: net worth, and which heroes help destroy which objective."""

import numpy as np
import pytest

from fivectl.config import load_recipe
from fivectl.errors import BadInput, ConfigError
from fivectl.sim import data as D
from fivectl.sim.objectives import OBJECTIVES, ObjectiveTracker, hero_networth
from tests.sim.conftest import make_env, noop, place, slot_of

ATTACK = 2


def building(env, team: int, utype: int, tier: int = 0) -> int:
    L = env.layout
    for b in range(L.bld_end - L.bld_start):
        if L.b_team[b] == team and L.b_utype[b] == utype and (tier == 0 or L.b_tier[b] == tier):
            return L.bld_start + b
    raise AssertionError("no such building")


def test_networth_is_gold_plus_the_cost_of_items_held(schema):
    env = make_env(schema, num_games=2)
    s = env.state
    s.gold[:] = 100.0
    s.item_id[:] = 0
    s.item_id[1, 1, 3] = 2
    s.item_id[1, 1, 5] = 4
    expected = np.full((2, 2), 100.0) + np.array([[0, 0], [0, D.ITEMS[2, D.IT_COST] + D.ITEMS[4, D.IT_COST]]])
    np.testing.assert_allclose(hero_networth(s), expected, rtol=1e-6)


def test_a_tower_kill_credits_the_attackers_heroes_within_range_only(schema):
    env = make_env(schema, team_size=2)
    s = env.state
    tower = building(env, team=1, utype=D.UT_TOWER, tier=1)
    s.hp[0, tower] = 1.0
    place(env, 0, s.x[0, tower] - 100, s.y[0, tower])  # the attacker
    place(env, 1, s.x[0, tower] - 3 * D.XP_RANGE, s.y[0, tower])  # its teammate, far away
    place(env, 2, s.x[0, tower] + 150, s.y[0, tower])  # the tower's own team: never credited
    env.observe()
    tracker = ObjectiveTracker(env, ["tower_t2", "tower_t1", "ancient"])
    act = noop(env)
    act[0, 0] = (ATTACK, 0, slot_of(env, 0, tower), 0)
    tracker.before_step()
    _, _, done, info = env.step(act)
    events = tracker.events(done, info["winner"], info["game_time"])
    assert not done[0] and s.alive[0, tower] == 0
    expected = np.zeros((1, 4, 3), bool)
    expected[0, 0, 1] = True
    np.testing.assert_array_equal(events, expected)
    # Nothing is destroyed on the next step: no event.
    tracker.before_step()
    _, _, done, info = env.step(noop(env))
    assert not tracker.events(done, info["winner"], info["game_time"]).any()


def test_the_ancient_that_ends_a_game_is_read_from_the_outcome(schema):
    env = make_env(schema)
    L, s = env.layout, env.state
    ancient = int(L.ancient[1])
    for b in range(L.bld_end - L.bld_start):  # both tier-4 towers down: the ancient is vulnerable
        if L.b_team[b] == 1 and L.b_tier[b] == 4:
            s.alive[0, L.bld_start + b] = 0
    s.hp[0, ancient] = 1.0
    place(env, 0, s.x[0, ancient] - 100, s.y[0, ancient])
    env.observe()
    tracker = ObjectiveTracker(env, ["ancient", "tower_t4"])
    act = noop(env)
    act[0, 0] = (ATTACK, 0, slot_of(env, 0, ancient), 0)
    tracker.before_step()
    _, _, done, info = env.step(act)
    assert done[0] and info["winner"][0] == 0
    events = tracker.events(done, info["winner"], info["game_time"])
    np.testing.assert_array_equal(events[0], [[True, False], [False, False]])
    # A game decided at the time limit destroyed no ancient.
    limit = np.array([env.cfg.time_limit_s], np.float32)
    tracker.before_step()
    assert not tracker.events(np.array([True]), np.array([0], np.int8), limit).any()


def test_a_boss_kill_credits_the_killing_team_near_the_boss(schema):
    env = make_env(schema, num_games=2, team_size=2)
    s, boss = env.state, env.layout.boss
    for h in range(4):
        place(env, h, s.x[0, boss] + 200 * (h % 2) * D.XP_RANGE, s.y[0, boss])  # heroes 1, 3 far away
        place(env, h, s.x[1, boss] + 200 * (h % 2) * D.XP_RANGE, s.y[1, boss], g=1)
    tracker = ObjectiveTracker(env, ["boss"])
    tracker.before_step()
    s.boss_kills[0, 1] += 1  # team 1 killed the boss in game 0; nothing happened in game 1
    events = tracker.events(np.zeros(2, bool), np.full(2, -1, np.int8), np.zeros(2, np.float32))
    np.testing.assert_array_equal(events[..., 0], [[False, False, True, False], [False, False, False, False]])


def test_unknown_objective_names_are_refused(schema, tmp_path):
    with pytest.raises(BadInput, match="unknown objective"):
        ObjectiveTracker(make_env(schema), ["tower_t1", "roshan"])
    recipe = tmp_path / "r.toml"
    recipe.write_text('name = "r"\n[model]\naux_objectives = ["tower_t9"]\n')
    with pytest.raises(ConfigError, match="model.aux_objectives"):
        load_recipe(recipe)
    recipe.write_text(f'name = "r"\n[model]\naux_objectives = {list(OBJECTIVES)!r}\n'.replace("'", '"'))
    assert load_recipe(recipe).model.aux_objectives == list(OBJECTIVES)
