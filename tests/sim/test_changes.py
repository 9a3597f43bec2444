"""Environment changes (fivectl/sim/changes.py): per-game variants drawn at each game's start, and what each
registered change changes in the game."""

import numpy as np
import pytest

from fivectl.errors import BadInput
from fivectl.schema import load_schema
from fivectl.sim import data as D
from fivectl.sim.changes import CHANGES, KINDS, get_change, missing_surgery
from fivectl.sim.components import REWARD_COMPONENTS
from tests.sim.conftest import make_env, noop, place, slot_of


def schema_with_item4():
    """Schema v3 with the action ``surgery add-action --action item4`` adds (and its previous-action vocabulary)."""
    from fivectl.config.model import ModelConfig
    from fivectl.surgery.add_action import plan_add_action

    return plan_add_action(load_schema(3), ModelConfig(), 1, "item4").schema_after


def play(env, steps):
    """Noop steps; returns (variant of every game that ended, in order per slot) and the step infos."""
    ended = [[] for _ in range(env.num_games)]
    for _ in range(steps):
        _, _, done, info = env.step(noop(env))
        for g in np.flatnonzero(done):
            ended[g].append(bool(info["variant"][g]))
    return ended


def test_registry_documents_every_change_and_unknown_names_get_a_suggestion():
    assert {"fast-waves", "canary-mirror", "storm-maul"} <= set(CHANGES)
    for change in CHANGES.values():
        assert change.kind in KINDS and "\n" not in change.summary and len(change.doc) > 100
    with pytest.raises(BadInput, match="did you mean fast-waves"):
        get_change("fast-wave")
    schema = load_schema(3)
    assert missing_surgery(get_change("fast-waves"), schema) is None
    assert missing_surgery(get_change("storm-maul"), schema, "runs/a") == (
        "fivectl surgery add-action runs/a --action item4 --out runs/a-storm-maul"
    )
    assert missing_surgery(get_change("storm-maul"), schema_with_item4()) is None


def test_variants_are_drawn_per_game_deterministic_per_seed_and_independent_of_the_batch_size(schema):
    envs = []
    for games in (6, 2, 6):
        env = make_env(schema, games, seed=5, time_limit_s=2.0)
        env.set_change("fast-waves", 0.5)
        env.reset()
        envs.append((env.variant.copy(), play(env, 60), env.variant.copy()))
    (v6, ended6, now6), (v2, ended2, now2), again = envs
    assert np.array_equal(v6[:2], v2) and np.array_equal(now6[:2], now2) and ended6[:2] == ended2
    assert np.array_equal(v6, again[0]) and ended6 == again[1]
    every_game = [v for slot in ended6 for v in slot] + list(now6)
    assert len(every_game) >= 24 and 0.2 < np.mean(every_game) < 0.8  # both variants, about half each
    assert any(len(set(slot)) == 2 for slot in ended6)  # a slot's variant is redrawn at each game's start


def test_fraction_zero_is_the_unchanged_game_bit_for_bit_and_start_rng_recreates_a_variant(schema):
    plain = make_env(schema, 3, seed=9, randomize_initial_state=True, randomize_lineup=True)
    zero = make_env(schema, 3, seed=9, randomize_initial_state=True, randomize_lineup=True)
    zero.set_change("canary-mirror", 0.0)
    zero.reset()
    rng_a, rng_b = np.random.default_rng(1), np.random.default_rng(1)
    for _ in range(25):
        oa, ra, _, ia = plain.step(plain.sample_random_actions(rng_a))
        ob, rb, _, ib = zero.step(zero.sample_random_actions(rng_b))
        assert np.array_equal(ra, rb) and all(np.array_equal(oa[k], ob[k]) for k in oa)
        assert not ia["variant"].any() and not ib["variant"].any()
    assert np.array_equal(plain.core_state.uf, zero.core_state.uf)
    half = make_env(schema, 4, seed=2)
    half.set_change("fast-waves", 0.5)
    half.reset()
    again = make_env(schema, 4, seed=77)
    again.set_change("fast-waves", 0.5)
    again.reset(start_rng=half.start_rng)
    assert np.array_equal(half.variant, again.variant) and np.array_equal(half.core_state.uf, again.core_state.uf)


def test_bad_fractions_and_changes_the_schema_cannot_express(schema):
    env = make_env(schema)
    with pytest.raises(BadInput, match="fraction"):
        env.set_change("fast-waves", 1.5)
    with pytest.raises(BadInput, match="surgery add-action RUN --action item4"):
        env.set_change("storm-maul", 1.0)
    with pytest.raises(BadInput, match="did you mean canary-mirror"):
        env.set_change("canary-mirorr", 1.0)


def creeps_alive(env):
    s, L = env.state, env.layout
    return int(s.alive[0, L.creep_start :].sum())


def test_fast_waves_spawn_every_20_seconds(schema):
    plain, fast = make_env(schema), make_env(schema)
    fast.set_change("fast-waves", 1.0)
    fast.reset()
    assert fast.variant.all() and fast.state.wave_ticks[0] == int(D.FAST_WAVE_INTERVAL_S * fast.cfg.fps)
    steps = int((D.FAST_WAVE_INTERVAL_S + 1) * plain.cfg.fps / plain.cfg.frameskip)
    before = creeps_alive(fast)
    play(plain, steps)
    play(fast, steps)
    wave = 2 * (D.WAVE_MELEE + D.WAVE_RANGED)
    assert creeps_alive(fast) >= before + wave - 2  # a second wave at 20 s (the first ones may have lost a creep)
    assert creeps_alive(plain) <= before
    obs = fast.observe()
    next_wave = obs["global.float"][0, 0, fast.schema.group("global").float_columns()["next_wave"]]
    assert 0 < float(next_wave[0]) <= D.FAST_WAVE_INTERVAL_S


def test_canary_mirror_reflects_the_move_offset_through_the_hero(schema):
    move = schema.action.primary.index("move")
    targets = {}
    for fraction in (0.0, 1.0):
        env = make_env(schema)
        env.set_change("canary-mirror", fraction)
        env.reset()
        place(env, 0, 6000, 6000)
        env.observe()
        act = noop(env)
        act[0, 0] = (move, 0, 0, 2 * 9 + 7)  # offset cell (+3, -2)
        env.step(act)
        targets[fraction] = (env.state.ord_x[0, 0] - 6000, env.state.ord_y[0, 0] - 6000)
    assert targets[0.0] == (3 * D.OFFSET_CELL, -2 * D.OFFSET_CELL)
    assert targets[1.0] == (-3 * D.OFFSET_CELL, 2 * D.OFFSET_CELL)


def test_storm_maul_is_bought_first_and_used_only_through_item4_only_when_owned():
    schema = schema_with_item4()
    item4 = schema.action.primary.index("item4")
    plain = make_env(schema)
    env = make_env(schema)
    env.set_change("storm-maul", 1.0)
    env.reset()
    for e in (plain, env):
        place(e, 0, 6000, 6000)
        place(e, 1, 6400, 6000)
        e.state.gold[0, 0] = 5000.0
        obs = e.observe()
        assert not obs["action_mask"][0, :, item4].any()  # not owned yet
        e.step(noop(e))  # the scripted shop runs at the end of the step
    assert env.state.item_id[0, 0, D.NEW_ITEM_SLOT] == D.NEW_ITEM
    assert D.NEW_ITEM not in plain.state.item_id[0, 0]
    plain_obs, obs = plain.observe(), env.observe()
    assert not plain_obs["action_mask"][..., item4].any()
    assert obs["action_mask"][0, 0, item4] and obs["param_mask"][0, 0, item4].tolist() == [True, False]
    assert D.NEW_ITEM not in env.state.item_id[0, 0, : D.N_ACTIVE_SLOTS]  # item1..3 never reach the maul
    hp = env.state.hp[0, 1]
    act = noop(env)
    act[0, 0] = (item4, 0, slot_of(env, 0, 1), 0)
    _, _, _, info = env.step(act)
    assert info["invalid_actions"][0, 0] == 0
    assert env.state.stun_t[0, 1] > 0 and env.state.hp[0, 1] < hp
    assert env.state.item_cd[0, 0, D.NEW_ITEM_SLOT] > 0 and not env.observe()["action_mask"][0, 0, item4]


def test_new_hero_joins_random_lineups_only_under_the_change_and_needs_the_larger_vocabulary():
    from fivectl.config.model import ModelConfig
    from fivectl.surgery.add_action import plan_add_hero

    with pytest.raises(BadInput, match="surgery add-hero RUN --vocab 19"):
        make_env(load_schema(3)).set_change("new-hero", 1.0)
    schema = plan_add_hero(load_schema(3), ModelConfig(), 1, 19).schema_after
    seen = {}
    for fraction in (0.0, 1.0):
        env = make_env(schema, 32, seed=4, randomize_lineup=True)
        env.set_change("new-hero", fraction)
        obs = env.reset()
        hero_ids = env.state.hero_id[:, :2]
        seen[fraction] = (hero_ids == D.NEW_HERO).any(axis=1)
        cat = schema.group("self").cat_columns()["hero_id"]
        assert np.array_equal(obs["self.cat"][..., cat.start], hero_ids + 1)
    assert not seen[0.0].any() and 0 < seen[1.0].sum() < 32
    assert D.ALL_HERO_NAMES[D.NEW_HERO] not in D.HERO_NAMES  # the unchanged game's pool is the 17


def test_the_item4_action_is_unknown_to_schemas_without_it():
    schema = load_schema(3)
    assert "item4" not in schema.action.primary
    grown = schema_with_item4()
    assert grown.action.primary[:-1] == schema.action.primary and grown.action.primary[-1] == "item4"
    prev = {f.name: f for f in grown.group("prev_action").fields}["primary"]
    assert prev.vocab == grown.action.n_primary == schema.action.n_primary + 1


def test_canary_swapped_credit_swaps_the_teams_rewards_and_leaves_the_game_alone(schema):
    from fivectl.sim import state as ST

    envs = []
    for swapped in (False, True):
        env = make_env(schema, 2, seed=4, team_size=2, lanes=1, time_limit_s=6.0)
        env.set_change("canary-swapped-credit", 1.0)
        env.reset()
        if not swapped:  # the same draws, then the game as if it had not drawn the change
            env.core_state.gi[:, ST.GI_SWAP_CREDIT] = 0
        envs.append(env)
    plain, canary = envs
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    for _ in range(100):  # to the end of the first games (a new game draws its variant again)
        _, ra, done_a, ia = plain.step(plain.sample_random_actions(rng_a))
        _, rb, done_b, ib = canary.step(canary.sample_random_actions(rng_b))
        assert np.array_equal(rb[:, :2], ra[:, 2:]) and np.array_equal(rb[:, 2:], ra[:, :2])
        assert np.array_equal(done_a, done_b)
        if done_a.all():
            break
    assert done_a.all() and np.array_equal(ia["winner"], ib["winner"])
    win = list(REWARD_COMPONENTS).index("win")
    assert np.abs(ra[..., win]).sum() > 0  # the win/loss was swapped too
