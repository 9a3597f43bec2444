import dataclasses

import numpy as np
import pytest

from fivectl.errors import BadInput
from fivectl.schema import load_schema
from fivectl.schema.spec import Field
from fivectl.sim.observe import MASK_KEYS, OBSERVER_UNIT_FEATURES, compile_schema
from tests.sim.conftest import make_env, noop, place


@pytest.fixture(scope="module")
def schema():
    return load_schema(1)


@pytest.mark.parametrize("team_size,lanes", [(1, 1), (5, 3)])
def test_arrays_match_the_schema_specs(schema, team_size, lanes):
    env = make_env(schema, 2, team_size=team_size, lanes=lanes)
    obs, *_ = env.step(noop(env))
    specs = schema.array_specs()
    assert set(obs) == set(specs)
    for key, (shape, dtype) in specs.items():
        assert obs[key].shape == (2, 2 * team_size, *shape), key
        assert obs[key].dtype == np.dtype(dtype), key
        assert obs[key].flags.c_contiguous
    assert obs["heroes.mask"][:, :, 0].all()  # the controlled hero is its own closest hero
    cols = schema.group("heroes").float_columns()
    assert (obs["heroes.float"][:, :, 0, cols["is_self"]] == 1).all()


def test_param_mask_and_categoricals(schema):
    env = make_env(schema)
    obs = env.observe()
    pm = obs["param_mask"][0, 0]
    assert pm[1].tolist() == [False, True]  # move: offset
    assert pm[2].tolist() == [True, False]  # attack: unit
    assert pm[0].tolist() == [False, False]
    hero_id = obs["self.cat"][0, 0, schema.group("self").cat_columns()["hero_id"]]
    assert int(hero_id[0]) == env.state.hero_id[0, 0] + 1


def test_fog_hides_enemies_and_keeps_the_last_seen_hero(schema):
    env = make_env(schema)
    cols = schema.group("heroes").float_columns()
    place(env, 0, 3200, 3000)
    place(env, 1, 3000, 3000)
    obs = env.observe()
    assert obs["heroes.mask"][0, 0].tolist()[:2] == [True, True]
    assert obs["heroes.float"][0, 0, 1, cols["visible"]] == 1
    place(env, 1, 9000, 2000)  # out of every team-0 unit's vision
    obs = env.observe()
    enemy = obs["heroes.float"][0, 0, 1]
    assert obs["heroes.mask"][0, 0, 1] and enemy[cols["visible"]] == 0
    assert enemy[cols["dx"]] == pytest.approx(-0.2)  # at its last seen position
    assert not obs["target_mask"][0, 0, 2, 1]  # cannot be attacked while unseen
    for _ in range(3):
        obs, *_ = env.step(noop(env))
    assert obs["heroes.float"][0, 0, 1, cols["seen_age"]] == pytest.approx(0.4)
    # every creep agent 0 observes is visible to its team
    first = schema.target_offsets()["creeps"]
    for k in np.flatnonzero(obs["creeps.mask"][0, 0]):
        u = env.state.slot_unit[0, 0, first + k]
        assert env.state.vis[0, 0, u]


def test_no_fog_shows_everything(schema):
    env = make_env(schema, fog_of_war=False)
    place(env, 1, 9000, 2000)
    obs = env.observe()
    cols = schema.group("heroes").float_columns()
    assert obs["heroes.mask"][0, 0, 1] and obs["heroes.float"][0, 0, 1, cols["visible"]] == 1


def test_retired_fields_are_constants_and_unknown_fields_fail(schema):
    g = schema.group("global")
    retired = tuple(
        dataclasses.replace(f, retired=True, constant=3.5) if f.name == "game_time" else f for f in g.fields
    )
    s2 = dataclasses.replace(
        schema, groups=tuple(dataclasses.replace(x, fields=retired) if x is g else x for x in schema.groups)
    )
    env = make_env(s2)
    obs, *_ = env.step(noop(env))
    assert (obs["global.float"][..., g.float_columns()["game_time"]] == 3.5).all()
    bad = dataclasses.replace(g, fields=g.fields + (Field(name="moon_phase"),))
    s3 = dataclasses.replace(schema, groups=tuple(bad if x is g else x for x in schema.groups))
    with pytest.raises(BadInput, match="moon_phase"):
        compile_schema(s3, env.act_kind, env.act_slot)
    with pytest.raises(BadInput, match="action table"):
        compile_schema(schema, env.act_kind[:-1], env.act_slot[:-1])


def test_a_new_field_only_needs_the_registry(schema):
    """Schema v2 style change: append a registered field; the layout grows by its column at the end."""
    g = schema.group("creeps")
    grown = dataclasses.replace(g, fields=g.fields + (Field(name="armor"),))
    s2 = dataclasses.replace(schema, version=2, groups=tuple(grown if x is g else x for x in schema.groups))
    env = make_env(s2)
    obs, *_ = env.step(noop(env))
    assert obs["creeps.float"].shape[-1] == g.n_float + 1
    old = make_env(schema)
    obs_old, *_ = old.step(noop(old))
    assert np.array_equal(obs["creeps.float"][..., :-1], obs_old["creeps.float"])


def test_teammates_see_the_same_unit_rows_except_observer_columns(schema):
    """Unit rows are computed once per team: two teammates observing the same creep agree on every column but
    the observer-dependent ones, and those follow each hero's own position."""
    env = make_env(schema, 1, team_size=5, lanes=3)
    rng = np.random.default_rng(1)
    for _ in range(120):
        obs, *_ = env.step(env.sample_random_actions(rng))
    g = schema.group("creeps")
    cols = g.float_columns()
    observer = [cols[n] for n in OBSERVER_UNIT_FEATURES if n in cols]
    shared = np.ones(g.n_float, bool)
    for sl in observer:
        shared[sl] = False
    first = schema.target_offsets()["creeps"]
    slots = {}
    for h in (0, 1):
        n = int(obs["creeps.mask"][0, h].sum())
        slots[h] = {int(env.state.slot_unit[0, h, first + k]): k for k in range(n)}
    common = set(slots[0]) & set(slots[1])
    assert len(common) >= 3
    for u in common:
        row0 = obs["creeps.float"][0, 0, slots[0][u]]
        row1 = obs["creeps.float"][0, 1, slots[1][u]]
        assert (row0[shared] == row1[shared]).all()
        assert (obs["creeps.cat"][0, 0, slots[0][u]] == obs["creeps.cat"][0, 1, slots[1][u]]).all()
        for h, row in ((0, row0), (1, row1)):
            dx = (env.state.x[0, u] - env.state.x[0, h]) / 1000.0
            assert row[cols["dx"]][0] == pytest.approx(dx, abs=1e-5)


@pytest.mark.parametrize("team_size,lanes", [(1, 1), (5, 3)])
def test_a_masks_only_step_plays_the_same_game_and_masks_as_a_full_one(schema, team_size, lanes):
    """A held step of ``decide_every`` encodes the masks alone: they, the target slots the next actions refer to
    and the game that follows must be those of a full encoding (random valid actions, fog, a team frame)."""
    full = make_env(schema, 3, seed=5, team_size=team_size, lanes=lanes, randomize_initial_state=True)
    lean = make_env(schema, 3, seed=5, team_size=team_size, lanes=lanes, randomize_initial_state=True)
    rng_full, rng_lean = np.random.default_rng(1), np.random.default_rng(1)
    for t in range(40):
        masks_only = t % 2 == 0
        a = full.sample_random_actions(rng_full)
        assert np.array_equal(a, lean.sample_random_actions(rng_lean)), t
        obs, rew, done, _ = full.step(a)
        got, got_rew, got_done, _ = lean.step(a, masks_only=masks_only)
        assert np.array_equal(rew, got_rew) and np.array_equal(done, got_done), t
        assert np.array_equal(full.state.slot_unit, lean.state.slot_unit), t
        assert set(got) == (set(MASK_KEYS) if masks_only else set(obs)), t
        for key in got:
            assert np.array_equal(obs[key], got[key]), (t, key)
        assert obs["target_mask"].any(), "the check needs targets in view"
