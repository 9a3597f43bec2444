import numpy as np
import pytest

from fivectl.config.game import GameConfig
from fivectl.errors import BadInput
from fivectl.sim import COMPONENT_INDEX, MobaEnv, sample_valid_actions
from fivectl.sim import data as D
from fivectl.sim.core import health_f
from fivectl.sim.env import HOLD
from tests.sim.conftest import enemy_creep, make_env, noop, place, slot_of

P = {"noop": 0, "move": 1, "attack": 2, "buyback": 10}


def run(env, steps, seed):
    rng = np.random.default_rng(seed)
    trace = []
    for _ in range(steps):
        obs, rew, done, info = env.step(env.sample_random_actions(rng))
        trace.append((obs, rew, done, info))
    return trace


def test_same_seed_same_actions_is_bit_identical(schema):
    a = run(make_env(schema, 2, seed=7, randomize_lineup=True, randomize_initial_state=True), 40, 1)
    b = run(make_env(schema, 2, seed=7, randomize_lineup=True, randomize_initial_state=True), 40, 1)
    for (oa, ra, *_), (ob, rb, *_) in zip(a, b, strict=True):
        assert all(np.array_equal(oa[k], ob[k]) for k in oa)
        assert np.array_equal(ra, rb)
    c = run(make_env(schema, 2, seed=8, randomize_lineup=True, randomize_initial_state=True), 1, 1)
    assert not np.array_equal(a[0][0]["self.float"], c[0][0]["self.float"])


def test_a_game_does_not_depend_on_the_batch_size(schema):
    one = make_env(schema, 1, seed=3, randomize_initial_state=True)
    three = make_env(schema, 3, seed=3, randomize_initial_state=True)
    rng = np.random.default_rng(0)
    for _ in range(30):
        act = one.sample_random_actions(rng)
        batch = noop(three)
        batch[0] = act[0]
        o1, r1, _, _ = one.step(act)
        o3, r3, _, _ = three.step(batch)
        assert np.array_equal(r1[0], r3[0])
        assert all(np.array_equal(o1[k][0], o3[k][0]) for k in o1)


def test_masked_and_malformed_actions_are_counted_noops(schema):
    env = make_env(schema)
    act = noop(env)
    act[0, 0] = (P["buyback"], 0, 0, 0)  # masked: the hero is alive
    act[0, 1] = (99, 0, 0, 0)  # no such primary
    _, _, _, info = env.step(act)
    assert info["invalid_actions"][0].tolist() == [1, 1]
    assert env.state.prev_action[0, 0].tolist() == [0, 0, 0, 0]
    act = noop(env)
    act[0, 0] = (P["attack"], 0, env.schema.n_targets - 1, 0)  # an empty target slot
    act[0, 1] = (P["move"], 7, 0, 40)  # delay out of range
    _, _, _, info = env.step(act)
    assert info["invalid_actions"][0].tolist() == [1, 1]


def test_hold_keeps_the_order_and_the_previous_action_and_is_not_invalid(schema):
    env = make_env(schema)
    place(env, 0, 6000, 6000)
    env.observe()
    act = noop(env)
    act[0, 0] = (P["move"], 0, 0, 80)  # the far corner of the offset grid
    env.step(act)
    x0, prev = float(env.state.x[0, 0]), env.state.prev_action[0, 0].tolist()
    assert env.state.ord_type[0, 0] == 1 and prev[0] == P["move"]
    act[0, 0] = (HOLD, 0, 0, 0)
    act[0, 1] = (HOLD, 99, 99, 99)  # nothing else of a held action is read
    for _ in range(3):
        _, _, _, info = env.step(act)
        assert info["invalid_actions"][0].tolist() == [0, 0]
    assert env.state.ord_type[0, 0] == 1 and env.state.prev_action[0, 0].tolist() == prev
    per_step = x0 - 6000
    assert per_step > 0
    assert float(env.state.x[0, 0]) - x0 > 2.5 * per_step  # still walking to the ordered point
    act[0, 0] = noop(env)[0, 0]
    env.step(act)
    assert env.state.prev_action[0, 0].tolist() == [0, 0, 0, 0]  # a noop is a decision


def test_dead_hero_can_only_noop_or_buy_back(schema):
    env = make_env(schema)
    s = env.state
    s.alive[0, 0] = 0
    s.respawn_t[0, 0] = 300.0
    s.gold[0, 0] = 0.0
    obs = env.observe()
    assert obs["action_mask"][0, 0].tolist() == [True] + [False] * 10
    act = noop(env)
    act[0, 0] = (P["move"], 0, 0, 10)
    _, _, _, info = env.step(act)
    assert info["invalid_actions"][0, 0] == 1
    s.gold[0, 0] = 5000.0
    obs = env.observe()
    assert obs["action_mask"][0, 0, P["buyback"]]
    act[0, 0] = (P["buyback"], 0, 0, 0)
    _, rew, _, info = env.step(act)
    assert info["invalid_actions"][0, 0] == 0 and s.alive[0, 0] == 1


def test_random_valid_actions_are_rarely_invalid(schema):
    env = make_env(schema, 4, team_size=2, lanes=3)
    trace = run(env, 60, 5)
    invalid = sum(int(t[3]["invalid_actions"].sum()) for t in trace)
    # valid when chosen; only a target that dies or leaves range before the delay frame becomes invalid
    assert invalid <= 0.05 * 60 * 4 * 4


def test_last_hit_gives_gold_and_counts(schema):
    env = make_env(schema)
    creep = enemy_creep(env, team=1)
    place(env, 0, 6000, 6000)
    place(env, 1, 10000, 10000)
    place(env, creep, 6060, 6000)
    env.state.hp[0, creep] = 1.0
    env.observe()
    act = noop(env)
    act[0, 0] = (P["attack"], 0, slot_of(env, 0, creep), 0)
    _, rew, _, info = env.step(act)
    c = COMPONENT_INDEX
    assert rew[0, 0, c["last_hit"]] == 1
    assert rew[0, 0, c["gold"]] >= D.MELEE_CREEP[D.US_GOLD]
    assert rew[0, 0, c["xp"]] > 0
    assert info["last_hits"][0, 0] == 1 and env.state.alive[0, creep] == 0


def test_deny_counts_for_an_own_creep_below_half_health(schema):
    env = make_env(schema)
    creep = enemy_creep(env, team=0)
    place(env, 0, 6000, 6000)
    place(env, 1, 10000, 10000)
    place(env, creep, 6060, 6000)
    env.state.hp[0, creep] = 1.0
    obs = env.observe()
    slot = slot_of(env, 0, creep)
    assert obs["target_mask"][0, 0, P["attack"], slot]
    act = noop(env)
    act[0, 0] = (P["attack"], 0, slot, 0)
    _, rew, _, _ = env.step(act)
    assert rew[0, 0, COMPONENT_INDEX["deny"]] == 1 and rew[0, 0, COMPONENT_INDEX["gold"]] < 1


def test_hero_kill_and_death(schema):
    env = make_env(schema)
    place(env, 0, 6000, 6000)
    place(env, 1, 6080, 6000)
    env.state.hp[0, 0] = 1.0
    env.observe()
    act = noop(env)
    act[0, 1] = (P["attack"], 0, slot_of(env, 1, 0), 0)
    _, rew, _, info = env.step(act)
    c = COMPONENT_INDEX
    assert rew[0, 0, c["death"]] == 1 and rew[0, 1, c["kill"]] == 1
    assert rew[0, 1, c["gold"]] > 100
    assert info["kills"][0].tolist() == [0, 1]
    assert env.state.alive[0, 0] == 0 and env.state.respawn_t[0, 0] > 0


def test_health_component_is_the_change_of_f(schema):
    env = make_env(schema)
    s = env.state
    s.hp[0, 0] = 0.4 * s.max_hp[0, 0]  # at the fountain: it regenerates
    env.observe()
    before = health_f(s.hp[0, 0] / s.max_hp[0, 0])
    _, rew, _, _ = env.step(noop(env))
    after = health_f(s.hp[0, 0] / s.max_hp[0, 0])
    assert after > before
    assert rew[0, 0, COMPONENT_INDEX["health"]] == pytest.approx(after - before, rel=1e-5)
    assert health_f(0.0) == 0.0 and health_f(1.0) == 1.0


def test_destroying_the_ancient_wins(schema):
    env = make_env(schema)
    L, s = env.layout, env.state
    ancient = int(L.ancient[1])
    for b in range(L.bld_end - L.bld_start):  # both tier-4 towers down: the ancient is vulnerable
        if L.b_team[b] == 1 and L.b_tier[b] == 4:
            s.alive[0, L.bld_start + b] = 0
    s.hp[0, ancient] = 1.0
    place(env, 0, s.x[0, ancient] - 100, s.y[0, ancient])
    env.observe()
    act = noop(env)
    act[0, 0] = (P["attack"], 0, slot_of(env, 0, ancient), 0)
    _, rew, done, info = env.step(act)
    c = COMPONENT_INDEX
    assert done[0] and info["winner"][0] == 0
    assert rew[0, 0, c["win"]] == 1 and rew[0, 1, c["win"]] == -1
    assert rew[0, 0, c["ancient_hp"]] > 0
    assert env.state.tick[0] == 0  # auto-reset: the next game started


def test_time_limit_is_a_draw(schema):
    env = make_env(schema, time_limit_s=2.0)
    steps = 0
    done = np.zeros(1, bool)
    while not done[0] and steps < 20:
        _, rew, done, info = env.step(noop(env))
        steps += 1
    assert steps == 15 and info["winner"][0] == -1 and info["game_time"][0] == pytest.approx(2.0)
    assert rew[0, :, COMPONENT_INDEX["win"]].tolist() == [0.0, 0.0]


def test_tower_damage_is_two_thirds_linear_plus_one_third_on_death(schema):
    env = make_env(schema)
    L, s = env.layout, env.state
    t1 = next(
        L.bld_start + b for b in range(L.bld_end - L.bld_start) if L.b_team[b] == 1 and L.b_tier[b] == 1
    )
    s.hp[0, t1] = 1.0
    place(env, 0, s.x[0, t1] - 100, s.y[0, t1])
    env.observe()
    frac_before = 1.0 / s.max_hp[0, t1]
    act = noop(env)
    act[0, 0] = (P["attack"], 0, slot_of(env, 0, t1), 0)
    _, rew, _, info = env.step(act)
    assert info["towers_destroyed"][0].tolist() == [1, 0]
    assert rew[0, 0, COMPONENT_INDEX["tower_t1"]] == pytest.approx(2 / 3 * frac_before + 1 / 3, rel=1e-4)
    assert rew[0, 1, COMPONENT_INDEX["tower_t1"]] == 0


def test_building_near_credits_only_the_heroes_who_pushed(schema):
    """The team's tower reward goes to both heroes; the push reward only to the one beside the tower."""
    env = make_env(schema, team_size=2)
    L, s = env.layout, env.state
    t1 = next(
        L.bld_start + b for b in range(L.bld_end - L.bld_start) if L.b_team[b] == 1 and L.b_tier[b] == 1
    )
    s.hp[0, t1] = 1.0
    place(env, 0, s.x[0, t1] - 100, s.y[0, t1])
    place(env, 1, *D.FOUNTAIN_POS[0])  # at home, far from the push
    place(env, 2, *D.FOUNTAIN_POS[1])
    place(env, 3, *D.FOUNTAIN_POS[1])
    env.observe()
    act = noop(env)
    act[0, 0] = (P["attack"], 0, slot_of(env, 0, t1), 0)
    _, rew, _, info = env.step(act)
    assert info["towers_destroyed"][0].tolist() == [1, 0]
    tower, near = rew[0, :, COMPONENT_INDEX["tower_t1"]], rew[0, :, COMPONENT_INDEX["building_near"]]
    assert tower[0] == tower[1] > 0.3
    assert near[0] == pytest.approx(tower[0]) and near[1] == 0.0
    assert near[2] == near[3] == 0.0  # the losers earn nothing


def test_building_hit_credits_the_hitter_with_the_hp_its_attack_took(schema):
    """The team's tower reward goes to both heroes; the hit reward only to the one whose attack took the HP."""
    env = make_env(schema, team_size=2)
    L, s = env.layout, env.state
    t1 = next(
        L.bld_start + b for b in range(L.bld_end - L.bld_start) if L.b_team[b] == 1 and L.b_tier[b] == 1
    )
    place(env, 0, s.x[0, t1] - 100, s.y[0, t1])
    place(env, 1, *D.FOUNTAIN_POS[0])  # at home, far from the push
    place(env, 2, *D.FOUNTAIN_POS[1])
    place(env, 3, *D.FOUNTAIN_POS[1])
    env.observe()
    hp_before = float(s.hp[0, t1])
    hit, tower = np.zeros(2), np.zeros(2)
    for _ in range(12):
        act = noop(env)
        act[0, 0] = (P["attack"], 0, slot_of(env, 0, t1), 0)
        _, rew, _, _ = env.step(act)
        hit += rew[0, :2, COMPONENT_INDEX["building_hit"]]
        tower += rew[0, :2, COMPONENT_INDEX["tower_t1"]]
    taken = (hp_before - float(s.hp[0, t1])) / float(s.max_hp[0, t1])
    assert taken > 0 and hit[0] == pytest.approx(taken, rel=1e-4) and hit[1] == 0.0
    assert tower[0] == tower[1] == pytest.approx(2 / 3 * taken, rel=1e-4)


def test_bad_game_configs_raise_bad_input(schema):
    with pytest.raises(BadInput, match="pool"):
        MobaEnv(GameConfig(team_size=2, hero_pool=["Ashcaller", "Kestrel", "Ironbark"]), 1, 0, schema)
    with pytest.raises(BadInput, match="lanes"):
        MobaEnv(GameConfig(lanes=2), 1, 0, schema)
    with pytest.raises(BadInput, match="unknown hero"):
        MobaEnv(GameConfig(hero_pool=["Nobody", "Kestrel"]), 1, 0, schema)
    assert GameConfig(team_size=5, hero_pool=["Ashcaller"] * 3).validate()


def test_gold_spent_when_the_script_buys(schema):
    env = make_env(schema)
    env.state.gold[0, 0] = 5000.0
    _, rew, _, _ = env.step(noop(env))
    assert rew[0, 0, COMPONENT_INDEX["gold_spent"]] > 0
    assert env.state.item_id[0, 0, 3:].any()


def test_nuke_ability_damages_costs_mana_and_cools_down(schema):
    env = make_env(schema)  # fixed lineup: hero 0 is Ashcaller, level 1 with Ember Bolt in slot 1
    s = env.state
    assert D.HERO_NAMES[s.hero_id[0, 0]] == "Ashcaller" and s.abil_lvl[0, 0, 0] == 1
    place(env, 0, 6000, 6000)
    place(env, 1, 6400, 6000)
    s.atk_cd[0, 0] = 100.0  # no auto-attack in between: only the spell hits
    obs = env.observe()
    ability1 = env.schema.action.primary.index("ability1")
    assert obs["param_mask"][0, 0, ability1].tolist() == [True, False]
    hp, mana = s.hp[0, 1], s.mana[0, 0]
    act = noop(env)
    act[0, 0] = (ability1, 0, slot_of(env, 0, 1), 0)
    obs, _, _, info = env.step(act)
    bolt = D.ABILITIES[D.ABILITY_ID["ember_bolt"]]
    assert info["invalid_actions"][0, 0] == 0
    assert hp - s.hp[0, 1] == pytest.approx(
        bolt[D.AB_VAL] * (1 - D.MAGIC_RESIST), abs=1.0
    )  # plus a little regen
    assert mana - s.mana[0, 0] == pytest.approx(bolt[D.AB_MANA], abs=1.0)
    assert s.abil_cd[0, 0, 0] > 0 and not obs["action_mask"][0, 0, ability1]


def strike_at_one_hp(env, unit, gap):
    """Hero 0, ``gap`` units beside ``unit`` left at 1 HP (hero 1 far away), attacks it: the step's results."""
    s = env.state
    s.hp[0, unit] = 1.0
    place(env, 0, s.x[0, unit] - gap, s.y[0, unit])
    place(env, 1, 10000, 10000)
    env.observe()
    act = noop(env)
    act[0, 0] = (P["attack"], 0, slot_of(env, 0, unit), 0)
    return env.step(act)


def test_boss_gives_an_extra_life_that_saves_a_death(schema):
    env = make_env(schema)
    L, s, c = env.layout, env.state, COMPONENT_INDEX
    boss = L.boss
    _, rew, _, info = strike_at_one_hp(env, boss, 100)
    assert rew[0, 0, c["extra_life"]] == 1 and s.extra_life[0, 0] == 1
    assert info["boss_kills"][0].tolist() == [1, 0]
    # the extra life: the hero falls, respawns where it fell, and no death is counted
    place(env, 1, s.x[0, 0] + 80, s.y[0, 0])
    s.hp[0, 0] = 1.0
    env.observe()
    act = noop(env)
    act[0, 1] = (P["attack"], 0, slot_of(env, 1, 0), 0)
    _, rew, _, _ = env.step(act)
    assert rew[0, 0, c["death"]] == 0 and s.extra_life[0, 0] == 0 and s.alive[0, 0] == 0
    x = s.x[0, 0]
    for _ in range(int(D.AEGIS_RESPAWN_S * 7.5) + 1):
        env.step(noop(env))
    assert s.alive[0, 0] == 1 and s.x[0, 0] == pytest.approx(x, abs=200)


def test_neutral_gold_counts_the_jungle_gold_of_the_killer_only(schema):
    """A neutral camp unit's bounty is paid as `gold` and again as `neutral_gold`; a lane creep's only as `gold`."""
    env = make_env(schema)
    L, s, c = env.layout, env.state, COMPONENT_INDEX
    neutral = L.neu_start
    bounty = float(s.bounty_gold[0, neutral])
    _, rew, _, _ = strike_at_one_hp(env, neutral, 80)
    assert s.alive[0, neutral] == 0 and bounty > 0
    assert rew[0, 0, c["neutral_gold"]] == bounty and rew[0, 1, c["neutral_gold"]] == 0
    assert rew[0, 0, c["gold"]] >= bounty
    creep = enemy_creep(env, 1)
    place(env, 0, 6000, 6000)
    place(env, creep, 6060, 6000)
    s.hp[0, creep] = 1.0
    env.observe()
    earned = np.zeros_like(rew[0, 0])
    for _ in range(30):  # the swing waits for the attack cooldown the neutral left
        act = noop(env)
        act[0, 0] = (P["attack"], 0, slot_of(env, 0, creep), 0)
        _, rew, _, _ = env.step(act)
        earned += rew[0, 0]
        if not s.alive[0, creep]:
            break
    assert s.alive[0, creep] == 0 and earned[c["last_hit"]] == 1
    assert earned[c["gold"]] > 0 and earned[c["neutral_gold"]] == 0


def _play_to_time_limit(env):
    done = np.zeros(1, bool)
    while not done[0]:
        _, rew, done, info = env.step(noop(env))
    return rew, info


@pytest.mark.parametrize("rule, winner", [("tiebreak", 0), ("draw", -1)])
def test_time_limit_tiebreak_goes_to_the_team_that_took_more_building_hp(schema, rule, winner):
    env = make_env(schema, time_limit_s=2.0, time_limit_result=rule)
    L, s = env.layout, env.state
    enemy_t1 = next(
        L.bld_start + b for b in range(L.bld_end - L.bld_start) if L.b_team[b] == 1 and L.b_tier[b] == 1
    )
    s.hp[0, enemy_t1] = 0.5 * s.max_hp[0, enemy_t1]  # team 0 has taken half of a tower, nothing else differs
    rew, info = _play_to_time_limit(env)
    assert info["winner"][0] == winner
    # towers regenerate a little in the 2 s
    assert info["building_hp_taken"][0].tolist() == pytest.approx([0.5, 0.0], abs=0.02)
    expected = [1.0, -1.0] if winner == 0 else [0.0, 0.0]
    assert rew[0, :, COMPONENT_INDEX["win"]].tolist() == expected


def test_time_limit_tiebreak_counts_destroyed_buildings_before_damage(schema):
    env = make_env(schema, time_limit_s=2.0, time_limit_result="tiebreak")
    L, s = env.layout, env.state
    own_t1, enemy_t1 = (
        next(L.bld_start + b for b in range(L.bld_end - L.bld_start) if L.b_team[b] == t and L.b_tier[b] == 1)
        for t in (0, 1)
    )
    s.alive[0, own_t1] = 0  # team 1 destroyed a tower...
    s.towers_destroyed[0, 1] += 1
    s.hp[0, enemy_t1] = 0.1 * s.max_hp[0, enemy_t1]  # ...team 0 only damaged one (0.9 of a building < 1)
    _, info = _play_to_time_limit(env)
    assert info["winner"][0] == 1
    taken0, taken1 = info["building_hp_taken"][0]
    assert taken1 == 1.0 and taken0 == pytest.approx(0.9, abs=0.02)  # a destroyed building counts whole


def test_sampled_random_actions_are_uniform_over_valid_choices():
    n = 4000
    am = np.zeros((n, 4), np.bool_)
    am[:, 1:3] = True
    am[0] = False  # no valid primary: noop
    tm = np.zeros((n, 4, 3), np.bool_)
    tm[:, 1, [0, 2]] = True  # primary 2 has no valid target: slot 0
    out = sample_valid_actions(np.random.default_rng(0), am, tm, np.zeros((n, 4, 2), np.bool_), 4, 81)
    assert out.shape == (n, 4) and out.dtype == np.int32
    assert out[0, 0] == 0
    primary, delay, target, offset = out[1:].T
    assert set(primary.tolist()) == {1, 2} and abs((primary == 1).mean() - 0.5) < 0.04
    assert (
        set(target[primary == 1].tolist()) == {0, 2} and abs((target[primary == 1] == 0).mean() - 0.5) < 0.05
    )
    assert (target[primary == 2] == 0).all()
    assert np.bincount(delay, minlength=4).min() > 0.2 * n and delay.max() == 3
    assert offset.min() == 0 and offset.max() == 80 and len(set(offset.tolist())) == 81


def test_restoring_is_masked_when_it_would_be_wasted(schema):
    """HoK-style action mask: a salve needs HP below D.RESTORE_BELOW and no heal running; a clarity likewise."""
    env = make_env(schema)
    s = env.state
    salve, clarity = (D.ITEM_ID[name] for name in ("healing_salve", "clarity"))
    s.item_id[0, 0, 0], s.item_chg[0, 0, 0] = salve, 1
    s.item_id[0, 0, 1], s.item_chg[0, 0, 1] = clarity, 1
    item1, item2 = (env.schema.action.primary.index(p) for p in ("item1", "item2"))
    s.hp[0, 0], s.mana[0, 0] = s.max_hp[0, 0], s.max_mana[0, 0]
    obs = env.observe()
    assert not obs["action_mask"][0, 0, item1] and not obs["action_mask"][0, 0, item2]
    s.hp[0, 0] = 0.5 * s.max_hp[0, 0]
    s.mana[0, 0] = 0.5 * s.max_mana[0, 0]
    obs = env.observe()
    assert obs["action_mask"][0, 0, item1] and obs["action_mask"][0, 0, item2]
    act = noop(env)
    act[0, 0] = (item1, 0, 0, 40)
    obs, _, _, info = env.step(act)
    assert info["invalid_actions"][0, 0] == 0 and s.heal_t[0, 0] > 0
    assert not obs["action_mask"][0, 0, item1]  # one salve at a time


def test_using_a_consumable_reports_the_gold_it_cost(schema):
    """The consumed component: a salve used is its price, once, to the hero who used it."""
    env = make_env(schema)
    s = env.state
    salve = D.ITEM_ID["healing_salve"]
    s.item_id[0, 0, 0], s.item_chg[0, 0, 0] = salve, 1
    s.hp[0, 0] = 0.5 * s.max_hp[0, 0]
    env.observe()
    act = noop(env)
    act[0, 0] = (env.schema.action.primary.index("item1"), 0, 0, 40)
    _, rew, _, info = env.step(act)
    assert info["invalid_actions"][0, 0] == 0 and s.heal_t[0, 0] > 0
    consumed = rew[0, :, COMPONENT_INDEX["consumed"]]
    assert consumed[0] == pytest.approx(D.ITEMS[salve, D.IT_COST]) and consumed[1] == 0.0
    _, rew, _, _ = env.step(noop(env))
    assert rew[0, :, COMPONENT_INDEX["consumed"]].tolist() == [0.0, 0.0]


def test_restart_starts_new_games_only_where_asked(schema):
    env = make_env(schema, num_games=3)
    for _ in range(5):
        env.step(noop(env))
    obs = env.restart(np.array([False, True, False]))
    assert env.state.tick.tolist() == [5 * 4, 0, 5 * 4]
    assert set(obs) == set(env.observe())
    _, _, done, info = env.step(noop(env))
    assert not done.any() and info["game_time"].tolist() == pytest.approx([24 / 30, 4 / 30, 24 / 30])
    with pytest.raises(BadInput, match="shape"):
        env.restart(np.array([True]))


def test_off_lane_component_counts_seconds_away_from_the_assigned_lane_outside_the_enemy_base(schema):
    env = make_env(schema, team_size=2, lanes=3)
    assigned = env.state.lane_assign[0].copy()
    lanes = ("top", "mid", "bot")
    on_lane = D.LANE_POINTS[lanes[assigned[0]]][1]
    other = D.LANE_POINTS[lanes[(assigned[1] + 1) % 3]][1]
    place(env, 0, *on_lane)  # on its own lane
    place(env, 1, *other)  # on another lane
    place(env, 2, 6000, 9500)  # in the jungle, far from every lane
    place(env, 3, *D.FOUNTAIN_POS[1])  # at home: waiting in the own base is off the lane too
    env.observe()
    _, rew, _, _ = env.step(noop(env))
    off = rew[0, :, COMPONENT_INDEX["off_lane"]]
    step_s = env.cfg.frameskip / env.cfg.fps
    assert off.tolist() == pytest.approx([0.0, step_s, step_s, step_s])
    env.state.alive[0, 2] = 0  # the dead are nowhere
    env.state.respawn_t[0, 2] = 100.0  # ticks: still dead after this step
    place(env, 1, *D.FOUNTAIN_POS[1])  # in the enemy base: pushing its buildings is free
    env.observe()
    _, rew, _, _ = env.step(noop(env))
    assert rew[0, 1, COMPONENT_INDEX["off_lane"]] == 0.0
    assert rew[0, 2, COMPONENT_INDEX["off_lane"]] == 0.0
    assert rew[0, 3, COMPONENT_INDEX["off_lane"]] == pytest.approx(step_s)


def test_the_own_base_is_off_the_lane_unless_an_enemy_is_in_it(schema):
    """Every lane's path starts inside the base; waiting there beside the path is still off the lane (5v5 run
    15), and standing there to defend against an enemy inside is not."""
    env = make_env(schema, team_size=2, lanes=3)
    lanes = ("top", "mid", "bot")
    start = D.LANE_POINTS[lanes[env.state.lane_assign[0, 0]]][0]  # on the path, inside team 0's base
    place(env, 0, *start)
    place(env, 1, 6000, 9500)
    place(env, 2, 9000, 9000)
    place(env, 3, 9000, 9000)
    step_s = env.cfg.frameskip / env.cfg.fps
    env.observe()
    _, rew, _, _ = env.step(noop(env))
    assert rew[0, 0, COMPONENT_INDEX["off_lane"]] == pytest.approx(step_s)
    place(env, 0, *start)
    place(env, 2, start[0] + 300, start[1])  # an enemy hero walks in
    env.observe()
    _, rew, _, _ = env.step(noop(env))
    assert rew[0, 0, COMPONENT_INDEX["off_lane"]] == 0.0
