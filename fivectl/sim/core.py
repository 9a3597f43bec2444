"""Numba kernels of the embedded MOBA: reset, the 4-frame step, combat, economy, fog of war.

Single-threaded kernels over a batch of games (parallelism comes from worker processes). Work per tick is
O(units): targets are (re)acquired once per decision step through a spatial bucket grid, not every tick, and
visibility is computed once per step with the same buckets. Every random draw comes from the game's own
xorshift64* stream, so a game's trajectory depends on (seed, game index, actions) only, not on the batch size.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fivectl.sim import data as D
from fivectl.sim import state as ST

# Internal action kinds (the schema's primary names map onto these in env.py).
ACT_NOOP, ACT_MOVE, ACT_ATTACK, ACT_ABILITY, ACT_ITEM, ACT_BUYBACK = 0, 1, 2, 3, 4, 5
# A primary action of -1 is no decision at all (an agent that decides only every few steps, model.decide_every):
# the hero keeps its current order, the previous-action observation is kept, and nothing counts as invalid.
ACT_HOLD = -1
TT_NONE, TT_POINT, TT_UNIT, TT_UNIT_OFFSET = 0, 1, 2, 3
R_NONE, R_ATTACK, R_ENEMY_SPELL, R_ALLY_HERO = 0, 1, 2, 3

# Reward component columns (same order as components.REWARD_COMPONENTS).
C_WIN, C_XP, C_GOLD, C_GOLD_SPENT, C_HEALTH, C_MANA, C_KILL, C_DEATH, C_LAST_HIT, C_DENY = range(10)
C_EXTRA_LIFE, C_ANCIENT_HP, C_TOWER_T1, C_TOWER_T2, C_TOWER_T3, C_TOWER_T4, C_BARRACKS = range(10, 17)
C_OFF_LANE = 17
C_BUILDING_NEAR = 18
C_CONSUMED = 19
C_BUILDING_HIT = 20
C_NEUTRAL_GOLD = 21
N_COMPONENTS = 22

# Per-game stats reported in info: [G, N_STATS, 2]
ST_KILLS, ST_DEATHS, ST_TOWERS, ST_BARRACKS, ST_BOSS, ST_LAST_HITS, ST_DENIES, ST_NETWORTH = range(8)
ST_BUILDING_HP = 8
N_STATS = 9
STAT_NAMES = (
    "kills",
    "deaths",
    "towers_destroyed",
    "barracks_destroyed",
    "boss_kills",
    "last_hits",
    "denies",
    "networth",
    "building_hp_taken",
)

ABIL = D.ABILITIES
HSTAT = D.HERO_STATS
HABIL = D.HERO_ABILITIES
ITEMS = D.ITEMS
XPT = D.XP_TABLE
MELEE = D.MELEE_CREEP
RANGED = D.RANGED_CREEP
ACTIVE_CHOICES = D.ACTIVE_CHOICES
STAT_CHOICES = D.STAT_CHOICES


# ---------------------------------------------------------------- rng
@njit(cache=True, _nrt=False)
def rand_u64(S, g):
    x = S.rng[g]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    S.rng[g] = x
    return x * np.uint64(2685821657736338717)


@njit(cache=True, _nrt=False)
def rand01(S, g):
    return float(rand_u64(S, g) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True, _nrt=False)
def rand_int(S, g, n):
    return int(rand01(S, g) * n) % n


# ---------------------------------------------------------------- small helpers
@njit(cache=True, _nrt=False)
def zero_scratch(S, n):
    """Zero the first n cells of the float scratch (kernels run without numba's allocator, see state.py)."""
    for i in range(n):
        S.sf[i] = 0.0


@njit(cache=True, _nrt=False)
def clear_prev_action(S, g, h):
    for k in range(4):
        S.hi[g, ST.HI_PREV_ACTION + k, h] = 0


@njit(cache=True, _nrt=False)
def health_f(x):
    """Paper G: health reward shape f(x) = (x + 1 - (1 - x)^4) / 2, steeper near death."""
    return 0.5 * (x + 1.0 - (1.0 - x) ** 4)


@njit(cache=True, _nrt=False)
def armor_mult(armor):
    return 1.0 - 0.06 * armor / (1.0 + 0.06 * abs(armor))


@njit(cache=True, _nrt=False, inline="always")
def dist2(S, g, a, b):
    dx = S.uf[g, ST.UF_X, a] - S.uf[g, ST.UF_X, b]
    dy = S.uf[g, ST.UF_Y, a] - S.uf[g, ST.UF_Y, b]
    return dx * dx + dy * dy


@njit(cache=True, _nrt=False, inline="always")
def walkable(L, x, y):
    if x < 0.0 or y < 0.0 or x >= D.MAP_SIZE or y >= D.MAP_SIZE:
        return False
    return L.walk[int(x / D.TERRAIN_CELL), int(y / D.TERRAIN_CELL)] == 1


@njit(cache=True, _nrt=False)
def is_building(ut):
    return ut == D.UT_TOWER or ut == D.UT_BARRACKS or ut == D.UT_ANCIENT


@njit(cache=True, _nrt=False)
def vulnerable(S, L, g, u):
    """Buildings are invulnerable until their protectors fall (tier k needs tier k-1 of its lane, etc.)."""
    ut = S.ui[g, ST.UI_UTYPE, u]
    if not is_building(ut):
        return True
    b = u - L.bld_start
    any_dead = False
    all_dead = True
    n = 0
    for k in range(3):
        p = L.b_prot[b, k]
        if p < 0:
            continue
        n += 1
        if S.ui[g, ST.UI_ALIVE, p]:
            all_dead = False
        else:
            any_dead = True
    if n == 0:
        return True
    return all_dead if L.b_prot_all[b] else any_dead


@njit(cache=True, _nrt=False, inline="always")
def net_worth(S, g, h):
    w = S.hf[g, ST.HF_GOLD, h]
    for k in range(D.N_ITEM_SLOTS):
        w += ITEMS[S.hi[g, ST.HI_ITEM_ID + k, h], D.IT_COST]
    return w


@njit(cache=True, _nrt=False, inline="always")
def buyback_cost(S, g, h):
    return D.BUYBACK_BASE + net_worth(S, g, h) / D.BUYBACK_NET_WORTH_DIV


# ---------------------------------------------------------------- hero stats, abilities, items
@njit(cache=True, _nrt=False)
def passive_bonus(S, g, h):
    dmg = 0.0
    arm = 0.0
    for k in range(4):
        a = S.hi[g, ST.HI_ABIL_ID + k, h]
        lv = S.hi[g, ST.HI_ABIL_LVL + k, h]
        if a > 0 and lv > 0 and ABIL[a, D.AB_KIND] == D.AK_PASSIVE:
            dmg += ABIL[a, D.AB_VAL] + ABIL[a, D.AB_VAL_LVL] * (lv - 1)
            arm += ABIL[a, D.AB_DUR] * lv
    return dmg, arm


@njit(cache=True, _nrt=False)
def recompute_hero_stats(S, g, h):
    """Level, items and passives -> unit stats; HP and mana keep their fractions."""
    hid = S.hi[g, ST.HI_HERO_ID, h]
    lv = S.hi[g, ST.HI_LEVEL, h] - 1
    st = HSTAT[hid]
    hp_frac = S.uf[g, ST.UF_HP, h] / S.uf[g, ST.UF_MAX_HP, h] if S.uf[g, ST.UF_MAX_HP, h] > 0 else 1.0
    mp_frac = S.uf[g, ST.UF_MANA, h] / S.uf[g, ST.UF_MAX_MANA, h] if S.uf[g, ST.UF_MAX_MANA, h] > 0 else 1.0
    max_hp = st[D.HS_HP] + st[D.HS_HP_LVL] * lv
    max_mana = st[D.HS_MANA] + st[D.HS_MANA_LVL] * lv
    dmg = st[D.HS_DMG] + st[D.HS_DMG_LVL] * lv
    armor = st[D.HS_ARMOR] + st[D.HS_ARMOR_LVL] * lv
    speed = st[D.HS_SPEED]
    for k in range(D.N_ITEM_SLOTS):
        it = S.hi[g, ST.HI_ITEM_ID + k, h]
        max_hp += ITEMS[it, D.IT_HP]
        max_mana += ITEMS[it, D.IT_MANA]
        dmg += ITEMS[it, D.IT_DMG]
        armor += ITEMS[it, D.IT_ARMOR]
        speed += ITEMS[it, D.IT_SPEED]
    pd, pa = passive_bonus(S, g, h)
    S.uf[g, ST.UF_MAX_HP, h] = max_hp
    S.uf[g, ST.UF_MAX_MANA, h] = max_mana
    S.uf[g, ST.UF_HP, h] = hp_frac * max_hp
    S.uf[g, ST.UF_MANA, h] = mp_frac * max_mana
    S.uf[g, ST.UF_DMG, h] = dmg + pd
    S.uf[g, ST.UF_ARMOR, h] = armor + pa
    S.uf[g, ST.UF_SPEED, h] = speed
    S.uf[g, ST.UF_HP_REGEN, h] = st[D.HS_HP_REGEN] + 0.1 * lv
    S.uf[g, ST.UF_MANA_REGEN, h] = st[D.HS_MANA_REGEN] + 0.05 * lv


@njit(cache=True, _nrt=False)
def learn_abilities(S, g, h):
    """Scripted ability build (paper F.1): ultimate at 6/12/18, otherwise the lowest-levelled basic ability
    in slot order, capped at (hero level + 1) / 2 like Dota."""
    lv = S.hi[g, ST.HI_LEVEL, h]
    spent = 0
    for k in range(4):
        spent += S.hi[g, ST.HI_ABIL_LVL + k, h]
    while spent < lv:
        best = -1
        ult = HABIL[S.hi[g, ST.HI_HERO_ID, h], 3]
        if ult > 0 and ABIL[ult, D.AB_ULT] > 0 and S.hi[g, ST.HI_ABIL_LVL + 3, h] < min(3, lv // 6):
            best = 3
        else:
            best_lvl = 99
            for k in range(4):
                a = S.hi[g, ST.HI_ABIL_ID + k, h]
                if a == 0 or ABIL[a, D.AB_ULT] > 0:
                    continue
                cur = S.hi[g, ST.HI_ABIL_LVL + k, h]
                if cur < ABIL[a, D.AB_MAXLVL] and cur < (lv + 1) // 2 and cur < best_lvl:
                    best = k
                    best_lvl = cur
        if best < 0:
            break
        S.hi[g, ST.HI_ABIL_LVL + best, h] += 1
        spent += 1
    recompute_hero_stats(S, g, h)


@njit(cache=True, _nrt=False)
def add_xp(S, g, h, amount, rew):
    if amount <= 0.0:
        return
    S.hf[g, ST.HF_XP, h] += amount
    rew[h, C_XP] += amount
    leveled = False
    while S.hi[g, ST.HI_LEVEL, h] < D.MAX_LEVEL and S.hf[g, ST.HF_XP, h] >= XPT[S.hi[g, ST.HI_LEVEL, h] + 1]:
        S.hi[g, ST.HI_LEVEL, h] += 1
        leveled = True
    if leveled:
        learn_abilities(S, g, h)


@njit(cache=True, _nrt=False)
def add_gold(S, g, h, amount, rew):
    S.hf[g, ST.HF_GOLD, h] += amount
    rew[h, C_GOLD] += amount


@njit(cache=True, _nrt=False)
def buy(S, g, h, slot, item, rew):
    cost = ITEMS[item, D.IT_COST]
    S.hf[g, ST.HF_GOLD, h] -= cost
    S.hf[g, ST.HF_GOLD_SPENT_TOTAL, h] += cost
    rew[h, C_GOLD_SPENT] += cost
    S.hi[g, ST.HI_ITEM_ID + slot, h] = item
    S.hi[g, ST.HI_ITEM_CHG + slot, h] = int(ITEMS[item, D.IT_CHARGES])
    S.hf[g, ST.HF_ITEM_CD + slot, h] = 0.0
    recompute_hero_stats(S, g, h)


@njit(cache=True, _nrt=False)
def scripted_purchases(S, g, h, rew):
    """Scripted item purchasing (paper F.1) with an instant courier: restock the consumables of slots 0-1, then
    follow the per-game item plan (slot 2 = active item, 3-5 = stat items)."""
    salve = 1
    clarity = 2
    if S.hi[g, ST.HI_ITEM_ID + 0, h] == 0 and S.hf[g, ST.HF_GOLD, h] >= ITEMS[salve, D.IT_COST] + 50.0:
        buy(S, g, h, 0, salve, rew)
    if S.hi[g, ST.HI_ITEM_ID + 1, h] == 0 and S.hf[g, ST.HF_GOLD, h] >= ITEMS[clarity, D.IT_COST] + 150.0:
        buy(S, g, h, 1, clarity, rew)
    p = S.hi[g, ST.HI_PLAN_PTR, h]
    if p >= D.ITEM_PLAN_LEN:
        return
    item = S.hi[g, ST.HI_ITEM_PLAN + p, h]
    if item == 0:
        S.hi[g, ST.HI_PLAN_PTR, h] = D.ITEM_PLAN_LEN
        return
    if S.hf[g, ST.HF_GOLD, h] < ITEMS[item, D.IT_COST]:
        return
    if item == D.NEW_ITEM:
        slot = D.NEW_ITEM_SLOT
    elif ITEMS[item, D.IT_ACTIVE] != D.IA_NONE:
        slot = 2
    else:
        slot = -1
        for k in range(D.N_ACTIVE_SLOTS, D.N_ITEM_SLOTS):
            if S.hi[g, ST.HI_ITEM_ID + k, h] == 0:
                slot = k
                break
        if slot < 0:  # full: replace the cheapest stat item if the new one is better
            cheapest = D.N_ACTIVE_SLOTS + (S.hi[g, ST.HI_ITEM_ID + D.NEW_ITEM_SLOT, h] == D.NEW_ITEM)
            for k in range(cheapest, D.N_ITEM_SLOTS):  # the change item (D.NEW_ITEM_SLOT) is never sold
                if (
                    ITEMS[S.hi[g, ST.HI_ITEM_ID + k, h], D.IT_COST]
                    < ITEMS[S.hi[g, ST.HI_ITEM_ID + cheapest, h], D.IT_COST]
                ):
                    cheapest = k
            if ITEMS[S.hi[g, ST.HI_ITEM_ID + cheapest, h], D.IT_COST] >= ITEMS[item, D.IT_COST]:
                S.hi[g, ST.HI_PLAN_PTR, h] = p + 1
                return
            S.hf[g, ST.HF_GOLD, h] += (
                0.5 * ITEMS[S.hi[g, ST.HI_ITEM_ID + cheapest, h], D.IT_COST]
            )  # sell back at half price
            slot = cheapest
    buy(S, g, h, slot, item, rew)
    S.hi[g, ST.HI_PLAN_PTR, h] = p + 1


# ---------------------------------------------------------------- damage and death
@njit(cache=True, _nrt=False)
def give_xp_around(S, L, g, u, team, amount, rew):
    """Split ``amount`` XP among living heroes of ``team`` within XP range of unit u."""
    n = 0
    r2 = D.XP_RANGE * D.XP_RANGE
    for h in range(L.n_heroes):
        if S.ui[g, ST.UI_ALIVE, h] and S.ui[g, ST.UI_TEAM, h] == team and dist2(S, g, h, u) <= r2:
            n += 1
    if n == 0:
        return
    share = amount / n
    for h in range(L.n_heroes):
        if S.ui[g, ST.UI_ALIVE, h] and S.ui[g, ST.UI_TEAM, h] == team and dist2(S, g, h, u) <= r2:
            add_xp(S, g, h, share, rew)


@njit(cache=True, _nrt=False)
def on_death(S, L, P, g, u, killer, rew):
    ut = S.ui[g, ST.UI_UTYPE, u]
    team = S.ui[g, ST.UI_TEAM, u]
    kteam = S.ui[g, ST.UI_TEAM, killer] if killer >= 0 else -1
    killer_hero = killer >= 0 and killer < L.n_heroes
    if ut == D.UT_HERO:
        if S.hi[g, ST.HI_EXTRA_LIFE, u] > 0:  # the boss's extra life: respawn where it fell, no death counted
            S.hi[g, ST.HI_EXTRA_LIFE, u] = 0
            S.ui[g, ST.UI_ALIVE, u] = 0
            S.hf[g, ST.HF_RESPAWN_T, u] = D.AEGIS_RESPAWN_S * P.fps
            S.hf[g, ST.HF_START_X, u] = S.uf[g, ST.UF_X, u]
            S.hf[g, ST.HF_START_Y, u] = S.uf[g, ST.UF_Y, u]
            return
        S.ui[g, ST.UI_ALIVE, u] = 0
        S.hi[g, ST.HI_DEATHS, u] += 1
        rew[u, C_DEATH] += 1.0
        lvl = S.hi[g, ST.HI_LEVEL, u]
        S.hf[g, ST.HF_RESPAWN_T, u] = (4.0 + 2.0 * lvl) * P.fps
        S.hf[g, ST.HF_START_X, u] = D.FOUNTAIN_POS[team, 0]
        S.hf[g, ST.HF_START_Y, u] = D.FOUNTAIN_POS[team, 1]
        loss = min(S.hf[g, ST.HF_GOLD, u], 30.0 + 8.0 * lvl)
        S.hf[g, ST.HF_GOLD, u] -= loss
        rew[u, C_GOLD] -= loss
        enemy = 1 - team
        give_xp_around(S, L, g, u, enemy, 100.0 + 25.0 * lvl, rew)
        if killer_hero and kteam == enemy:
            S.hi[g, ST.HI_KILLS, killer] += 1
            S.gi[g, ST.GI_KILLS_T + enemy] += 1
            rew[killer, C_KILL] += 1.0
            add_gold(S, g, killer, 150.0 + 10.0 * lvl, rew)
        else:
            S.gi[g, ST.GI_KILLS_T + enemy] += 1
        return
    S.ui[g, ST.UI_ALIVE, u] = 0
    if ut == D.UT_MELEE or ut == D.UT_RANGED:
        if killer_hero and kteam == team:
            S.hi[g, ST.HI_DENIES, killer] += 1
            S.gi[g, ST.GI_TEAM_DENIES + kteam] += 1
            rew[killer, C_DENY] += 1.0
            return
        give_xp_around(S, L, g, u, 1 - team, S.uf[g, ST.UF_BOUNTY_XP, u], rew)
        if killer_hero:
            S.hi[g, ST.HI_LAST_HITS, killer] += 1
            S.gi[g, ST.GI_TEAM_LAST_HITS + kteam] += 1
            rew[killer, C_LAST_HIT] += 1.0
            add_gold(S, g, killer, S.uf[g, ST.UF_BOUNTY_GOLD, u], rew)
        return
    if ut == D.UT_NEUTRAL or ut == D.UT_BOSS:
        if killer_hero:
            give_xp_around(S, L, g, u, kteam, S.uf[g, ST.UF_BOUNTY_XP, u], rew)
            S.hi[g, ST.HI_LAST_HITS, killer] += 1
            S.gi[g, ST.GI_TEAM_LAST_HITS + kteam] += 1
            rew[killer, C_LAST_HIT] += 1.0
            add_gold(S, g, killer, S.uf[g, ST.UF_BOUNTY_GOLD, u], rew)
            if ut == D.UT_NEUTRAL:  # the jungle's share of the gold, for a recipe to weigh apart from the lanes'
                rew[killer, C_NEUTRAL_GOLD] += S.uf[g, ST.UF_BOUNTY_GOLD, u]
        if ut == D.UT_BOSS:
            S.gf[g, ST.GF_BOSS_RESPAWN_T] = D.BOSS_RESPAWN_S * P.fps
            if killer_hero:
                S.gi[g, ST.GI_BOSS_KILLS + kteam] += 1
                S.hi[g, ST.HI_EXTRA_LIFE, killer] = 1
                for h in range(L.n_heroes):
                    if S.ui[g, ST.UI_TEAM, h] == kteam:
                        rew[h, C_EXTRA_LIFE] += 1.0
                        add_gold(S, g, h, 150.0, rew)
        else:
            c = L.n_camp[u - L.neu_start]
            if S.gf[g, ST.GF_CAMP_RESPAWN_T + c] <= 0.0:
                S.gf[g, ST.GF_CAMP_RESPAWN_T + c] = D.NEUTRAL_RESPAWN_S * P.fps
        return
    # buildings
    enemy = 1 - team
    if killer_hero and kteam == enemy:
        add_gold(S, g, killer, D.TOWER_GOLD if ut == D.UT_TOWER else D.BARRACKS_GOLD, rew)
    if ut == D.UT_TOWER:
        S.gi[g, ST.GI_TOWERS_DESTROYED + enemy] += 1
        for h in range(L.n_heroes):
            if S.ui[g, ST.UI_TEAM, h] == enemy:
                add_gold(S, g, h, D.TOWER_TEAM_GOLD, rew)
    elif ut == D.UT_BARRACKS:
        S.gi[g, ST.GI_BARRACKS_DESTROYED + enemy] += 1
    elif ut == D.UT_ANCIENT:
        S.gi[g, ST.GI_DONE] = 1
        S.gi[g, ST.GI_WINNER] = enemy


@njit(cache=True, _nrt=False)
def deal_damage(S, L, P, g, src, dst, amount, magical, rew):
    if not S.ui[g, ST.UI_ALIVE, dst] or not vulnerable(S, L, g, dst):
        return
    if magical:
        dmg = amount * (1.0 - D.MAGIC_RESIST if S.ui[g, ST.UI_UTYPE, dst] == D.UT_HERO else 1.0)
    else:
        dmg = amount * armor_mult(S.uf[g, ST.UF_ARMOR, dst])
    if (
        src < L.n_heroes
        and is_building(S.ui[g, ST.UI_UTYPE, dst])
        and S.ui[g, ST.UI_TEAM, src] != S.ui[g, ST.UI_TEAM, dst]
    ):
        # the hero's own share of the push: the fraction of the building's HP its attack took
        rew[src, C_BUILDING_HIT] += min(dmg, S.uf[g, ST.UF_HP, dst]) / S.uf[g, ST.UF_MAX_HP, dst]
    S.uf[g, ST.UF_HP, dst] -= dmg
    S.ui[g, ST.UI_LAST_ATTACKER, dst] = src
    if src < L.n_heroes and dst < L.n_heroes and S.ui[g, ST.UI_TEAM, src] != S.ui[g, ST.UI_TEAM, dst]:
        S.hf[g, ST.HF_AGGRO_T, src] = 2.0 * P.fps  # creeps and towers switch to a hero that hits their heroes
    if S.uf[g, ST.UF_HP, dst] <= 0.0:
        S.uf[g, ST.UF_HP, dst] = 0.0
        on_death(S, L, P, g, dst, src, rew)


# ---------------------------------------------------------------- spatial buckets and acquisition
@njit(cache=True, _nrt=False)
def bucket_of(x, y):
    bx = min(max(int(x / D.BUCKET_SIZE), 0), D.N_BUCKET_SIDE - 1)
    by = min(max(int(y / D.BUCKET_SIZE), 0), D.N_BUCKET_SIDE - 1)
    return bx, by


@njit(cache=True, _nrt=False)
def build_buckets(S, L, g):
    S.bhead[g, :] = -1
    for u in range(L.n_units):
        if not S.ui[g, ST.UI_ALIVE, u]:
            continue
        bx, by = bucket_of(S.uf[g, ST.UF_X, u], S.uf[g, ST.UF_Y, u])
        b = bx * D.N_BUCKET_SIDE + by
        S.bnext[g, u] = S.bhead[g, b]
        S.bhead[g, b] = u


@njit(cache=True, _nrt=False)
def acquire(S, L, g, u, radius):
    """Nearest attackable enemy within ``radius``; a hero that just hit one of our heroes comes first, then
    non-heroes, then heroes (Dota's creep/tower aggro rules, simplified)."""
    team = S.ui[g, ST.UI_TEAM, u]
    bx, by = bucket_of(S.uf[g, ST.UF_X, u], S.uf[g, ST.UF_Y, u])
    r2 = radius * radius
    best = -1
    best_score = 1e30
    for ix in range(max(bx - 1, 0), min(bx + 2, D.N_BUCKET_SIDE)):
        for iy in range(max(by - 1, 0), min(by + 2, D.N_BUCKET_SIDE)):
            v = S.bhead[g, ix * D.N_BUCKET_SIDE + iy]
            while v >= 0:
                tv = S.ui[g, ST.UI_TEAM, v]
                if tv != team and tv != 2:
                    d = dist2(S, g, u, v)
                    if d <= r2 and S.ui[g, ST.UI_ALIVE, v] and vulnerable(S, L, g, v):
                        score = d
                        if v < L.n_heroes:
                            score += 0.0 if S.hf[g, ST.HF_AGGRO_T, v] > 0.0 else 1e12
                        else:
                            score += 1e6
                        if score < best_score:
                            best_score = score
                            best = v
                v = S.bnext[g, v]
    return best


@njit(cache=True, _nrt=False)
def acquire_targets(S, L, g):
    """Once per decision step: creeps, towers and idle heroes pick targets; neutrals answer their attacker."""
    for u in range(L.n_heroes, L.n_units):
        if not S.ui[g, ST.UI_ALIVE, u]:
            continue
        ut = S.ui[g, ST.UI_UTYPE, u]
        if ut == D.UT_NEUTRAL or ut == D.UT_BOSS:
            t = S.ui[g, ST.UI_LAST_ATTACKER, u]
            if t >= 0 and S.ui[g, ST.UI_ALIVE, t]:
                S.ui[g, ST.UI_TARGET, u] = t
            else:
                S.ui[g, ST.UI_TARGET, u] = -1
            continue
        if S.uf[g, ST.UF_ACQ_RANGE, u] <= 0.0:  # barracks, ancient
            continue
        t = S.ui[g, ST.UI_TARGET, u]
        keep = (
            t >= 0
            and S.ui[g, ST.UI_ALIVE, t]
            and dist2(S, g, u, t) <= (S.uf[g, ST.UF_ACQ_RANGE, u] + 100.0) ** 2
        )
        if keep and t < L.n_heroes and S.hf[g, ST.HF_AGGRO_T, t] <= 0.0:
            keep = False  # re-check: a creep prefers creeps over a hero that is not aggressive
        if not keep:
            S.ui[g, ST.UI_TARGET, u] = acquire(S, L, g, u, S.uf[g, ST.UF_ACQ_RANGE, u])
    for h in range(L.n_heroes):
        if S.ui[g, ST.UI_ALIVE, h] and S.hi[g, ST.HI_ORD_TYPE, h] == 0:
            S.ui[g, ST.UI_TARGET, h] = acquire(S, L, g, h, S.uf[g, ST.UF_RNG, h] + 50.0)


# ---------------------------------------------------------------- vision
@njit(cache=True, _nrt=False)
def compute_vision(S, L, P, g):
    """vis[g, t, u]: some unit of team t sees u (within its vision radius). Uses the step's buckets.
    Without fog of war every living unit is visible to both teams."""
    for u in range(L.n_units):
        S.vis[g, 0, u] = False
        S.vis[g, 1, u] = False
        if not S.ui[g, ST.UI_ALIVE, u]:
            continue
        if not P.fog:
            S.vis[g, 0, u] = True
            S.vis[g, 1, u] = True
            continue
        tu = S.ui[g, ST.UI_TEAM, u]
        if tu < 2:
            S.vis[g, tu, u] = True
        bx, by = bucket_of(S.uf[g, ST.UF_X, u], S.uf[g, ST.UF_Y, u])
        for ix in range(max(bx - 1, 0), min(bx + 2, D.N_BUCKET_SIDE)):
            for iy in range(max(by - 1, 0), min(by + 2, D.N_BUCKET_SIDE)):
                v = S.bhead[g, ix * D.N_BUCKET_SIDE + iy]
                while v >= 0:
                    tv = S.ui[g, ST.UI_TEAM, v]
                    if tv < 2 and not S.vis[g, tv, u] and S.ui[g, ST.UI_ALIVE, v]:
                        if dist2(S, g, u, v) <= S.uf[g, ST.UF_VISION, v] * S.uf[g, ST.UF_VISION, v]:
                            S.vis[g, tv, u] = True
                    v = S.bnext[g, v]
    for t in range(2):
        for h in range(L.n_heroes):
            if S.vis[g, t, h] and S.ui[g, ST.UI_ALIVE, h]:
                S.ls[g, ST.LS_TICK, t, h] = S.gi[g, ST.GI_TICK]
                S.ls[g, ST.LS_X, t, h] = S.uf[g, ST.UF_X, h]
                S.ls[g, ST.LS_Y, t, h] = S.uf[g, ST.UF_Y, h]
                S.ls[g, ST.LS_HP, t, h] = S.uf[g, ST.UF_HP, h]
                S.ls[g, ST.LS_MAX_HP, t, h] = S.uf[g, ST.UF_MAX_HP, h]
                S.ls[g, ST.LS_MANA, t, h] = S.uf[g, ST.UF_MANA, h]
                S.ls[g, ST.LS_MAX_MANA, t, h] = S.uf[g, ST.UF_MAX_MANA, h]
                S.ls[g, ST.LS_LEVEL, t, h] = S.hi[g, ST.HI_LEVEL, h]
            elif (
                not S.ui[g, ST.UI_ALIVE, h] and S.ls[g, ST.LS_TICK, t, h] >= 0 and S.ui[g, ST.UI_TEAM, h] != t
            ):
                S.ls[g, ST.LS_TICK, t, h] = -1  # a dead enemy is not remembered at its last position


# ---------------------------------------------------------------- spawning and reset
@njit(cache=True, _nrt=False)
def init_unit(S, g, u, team, utype, x, y, stats):
    S.ui[g, ST.UI_ALIVE, u] = 1
    S.ui[g, ST.UI_TEAM, u] = team
    S.ui[g, ST.UI_UTYPE, u] = utype
    S.uf[g, ST.UF_X, u] = x
    S.uf[g, ST.UF_Y, u] = y
    S.uf[g, ST.UF_HP, u] = stats[D.US_HP]
    S.uf[g, ST.UF_MAX_HP, u] = stats[D.US_HP]
    S.uf[g, ST.UF_MANA, u] = 0.0
    S.uf[g, ST.UF_MAX_MANA, u] = 0.0
    S.uf[g, ST.UF_DMG, u] = stats[D.US_DMG]
    S.uf[g, ST.UF_ARMOR, u] = stats[D.US_ARMOR]
    S.uf[g, ST.UF_RNG, u] = stats[D.US_RANGE]
    S.uf[g, ST.UF_BAT, u] = stats[D.US_BAT]
    S.uf[g, ST.UF_SPEED, u] = stats[D.US_SPEED]
    S.uf[g, ST.UF_VISION, u] = stats[D.US_VISION]
    S.uf[g, ST.UF_BOUNTY_GOLD, u] = stats[D.US_GOLD]
    S.uf[g, ST.UF_BOUNTY_XP, u] = stats[D.US_XP]
    S.uf[g, ST.UF_ACQ_RANGE, u] = stats[D.US_ACQ]
    S.uf[g, ST.UF_ATK_CD, u] = 0.0
    S.ui[g, ST.UI_TARGET, u] = -1
    S.ui[g, ST.UI_LAST_ATTACKER, u] = -1
    S.uf[g, ST.UF_STUN_T, u] = 0.0
    S.uf[g, ST.UF_SLOW_T, u] = 0.0
    S.uf[g, ST.UF_BUFF_T, u] = 0.0
    S.uf[g, ST.UF_HEAL_T, u] = 0.0
    S.uf[g, ST.UF_MREGEN_T, u] = 0.0
    S.uf[g, ST.UF_HP_REGEN, u] = 0.0
    S.uf[g, ST.UF_MANA_REGEN, u] = 0.0
    S.uf[g, ST.UF_HOME_X, u] = x
    S.uf[g, ST.UF_HOME_Y, u] = y
    S.ui[g, ST.UI_TIER, u] = 0
    S.ui[g, ST.UI_LANE, u] = -1
    S.ui[g, ST.UI_WP, u] = 0


@njit(cache=True, _nrt=False)
def spawn_camp(S, L, g, c):
    for i in range(L.neu_start, L.neu_end):
        if L.n_camp[i - L.neu_start] == c:
            k = i - L.neu_start
            init_unit(S, g, i, 2, D.UT_NEUTRAL, L.n_x[k], L.n_y[k], L.n_stats[k])


@njit(cache=True, _nrt=False)
def spawn_boss(S, L, g):
    k = L.boss - L.neu_start
    init_unit(S, g, L.boss, 2, D.UT_BOSS, L.n_x[k], L.n_y[k], L.n_stats[k])
    S.uf[g, ST.UF_MAX_HP, L.boss] *= S.gf[g, ST.GF_BOSS_HP_MULT]
    S.uf[g, ST.UF_HP, L.boss] = S.uf[g, ST.UF_MAX_HP, L.boss]


@njit(cache=True, _nrt=False)
def spawn_wave(S, L, P, g):
    """One wave per lane per team: 3 melee + 1 ranged, stronger over time (+1.5% per wave) and as super
    creeps (x1.5) when the enemy's barracks of that lane has fallen."""
    wave = S.gi[g, ST.GI_TICK] // S.gi[g, ST.GI_WAVE_TICKS]
    scale = 1.0 + 0.015 * wave
    for li in range(L.n_lanes):
        base = L.creep_start + li * D.CREEP_SLOTS_PER_LANE
        for team in range(2):
            rax = L.bld_start + (0 if team == 1 else (L.bld_end - L.bld_start) // 2) + 3 + 4 * li + 3
            sup = 1.5 if not S.ui[g, ST.UI_ALIVE, rax] else 1.0
            start = 0 if team == 0 else 2
            sx = L.lane_pts[li, start, 0]
            sy = L.lane_pts[li, start, 1]
            # the formation is laid out along the team's own marching direction, so both teams' waves are
            # mirror images (melee in a row at the front, the ranged creep behind them)
            fx = L.lane_pts[li, 1, 0] - sx
            fy = L.lane_pts[li, 1, 1] - sy
            fd = np.sqrt(fx * fx + fy * fy)
            fx /= fd
            fy /= fd
            for k in range(D.WAVE_MELEE + D.WAVE_RANGED):
                slot = -1
                for s in range(base, base + D.CREEP_SLOTS_PER_LANE):
                    if not S.ui[g, ST.UI_ALIVE, s]:
                        slot = s
                        break
                if slot < 0:
                    return
                ranged = k >= D.WAVE_MELEE
                stats = RANGED if ranged else MELEE
                along = -100.0 if ranged else 0.0
                side = 0.0 if ranged else (k - 1) * 80.0
                ox = fx * along - fy * side
                oy = fy * along + fx * side
                init_unit(S, g, slot, team, D.UT_RANGED if ranged else D.UT_MELEE, sx + ox, sy + oy, stats)
                S.uf[g, ST.UF_MAX_HP, slot] *= scale * sup
                S.uf[g, ST.UF_HP, slot] = S.uf[g, ST.UF_MAX_HP, slot]
                S.uf[g, ST.UF_DMG, slot] *= scale * sup
                S.uf[g, ST.UF_BOUNTY_GOLD, slot] += wave * 0.75
                S.ui[g, ST.UI_LANE, slot] = li
                S.ui[g, ST.UI_WP, slot] = 1


@njit(cache=True, _nrt=False)
def spawn_hero(S, L, P, g, h):
    team = S.ui[g, ST.UI_TEAM, h]
    S.ui[g, ST.UI_ALIVE, h] = 1
    S.uf[g, ST.UF_X, h] = S.hf[g, ST.HF_START_X, h]
    S.uf[g, ST.UF_Y, h] = S.hf[g, ST.HF_START_Y, h]
    S.uf[g, ST.UF_HP, h] = S.uf[g, ST.UF_MAX_HP, h]
    S.uf[g, ST.UF_MANA, h] = S.uf[g, ST.UF_MAX_MANA, h]
    S.hf[g, ST.HF_RESPAWN_T, h] = 0.0
    S.ui[g, ST.UI_TARGET, h] = -1
    S.hi[g, ST.HI_ORD_TYPE, h] = 0
    S.uf[g, ST.UF_STUN_T, h] = 0.0
    S.uf[g, ST.UF_SLOW_T, h] = 0.0
    S.uf[g, ST.UF_BUFF_T, h] = 0.0
    S.uf[g, ST.UF_HEAL_T, h] = 0.0
    S.uf[g, ST.UF_MREGEN_T, h] = 0.0
    S.uf[g, ST.UF_ATK_CD, h] = 0.0
    S.hf[g, ST.HF_START_X, h] = D.FOUNTAIN_POS[team, 0]
    S.hf[g, ST.HF_START_Y, h] = D.FOUNTAIN_POS[team, 1]


@njit(cache=True, _nrt=False)
def draw_variant(S, P, g):
    """Whether the game starting in slot g runs the environment change (``MobaEnv.set_change``), and its rules.

    Drawn first, from the game's own stream, so it depends on the game's start state, the change and the
    fraction only (replays and ``start_rng`` re-create it); with a fraction of 0 nothing is drawn and the game
    is exactly the unchanged one."""
    fraction = P.change[ST.CK_FRACTION]
    variant = 0
    if fraction > 0.0:
        variant = 1 if rand01(S, g) < fraction else 0
    S.gi[g, ST.GI_VARIANT] = variant
    wave_s = P.change[ST.CK_WAVE_S] if variant else D.WAVE_INTERVAL_S
    S.gi[g, ST.GI_WAVE_TICKS] = int(wave_s * P.fps)
    S.gi[g, ST.GI_MIRROR_MOVES] = variant * int(P.change[ST.CK_MIRROR_MOVES])
    S.gi[g, ST.GI_NEW_ITEM] = variant * int(P.change[ST.CK_NEW_ITEM])
    S.gi[g, ST.GI_NEW_HERO] = variant * int(P.change[ST.CK_NEW_HERO])
    S.gi[g, ST.GI_SWAP_CREDIT] = variant * int(P.change[ST.CK_SWAP_CREDIT])


@njit(cache=True, _nrt=False)
def reset_game(S, L, P, g):
    U = L.n_units
    H = L.n_heroes
    for u in range(U):
        S.ui[g, ST.UI_ALIVE, u] = 0
        S.ui[g, ST.UI_UTYPE, u] = 0
        S.ui[g, ST.UI_TEAM, u] = 2
        S.ui[g, ST.UI_TARGET, u] = -1
        S.ui[g, ST.UI_LAST_ATTACKER, u] = -1
    S.gi[g, ST.GI_TICK] = 0
    S.gi[g, ST.GI_WINNER] = -1
    S.gi[g, ST.GI_DONE] = 0
    draw_variant(S, P, g)
    for t in range(2):
        S.gi[g, ST.GI_KILLS_T + t] = 0
        S.gi[g, ST.GI_TOWERS_DESTROYED + t] = 0
        S.gi[g, ST.GI_BARRACKS_DESTROYED + t] = 0
        S.gi[g, ST.GI_BOSS_KILLS + t] = 0
        S.gi[g, ST.GI_TEAM_LAST_HITS + t] = 0
        S.gi[g, ST.GI_TEAM_DENIES + t] = 0
        for h in range(H):
            S.ls[g, ST.LS_TICK, t, h] = -1
    S.slot_unit[g, :, :] = -1
    # buildings
    for b in range(L.bld_end - L.bld_start):
        u = L.bld_start + b
        ut = L.b_utype[b]
        zero_scratch(S, D.N_US_COLS)
        stats = S.sf[0 : D.N_US_COLS]
        stats[D.US_HP] = L.b_hp[b]
        stats[D.US_ARMOR] = D.TOWER_ARMOR if ut == D.UT_TOWER else D.BUILDING_ARMOR
        stats[D.US_VISION] = D.BUILDING_VISION
        stats[D.US_BAT] = 1.0
        if ut == D.UT_TOWER:
            stats[D.US_DMG] = D.TOWER_DMG[L.b_tier[b]]
            stats[D.US_RANGE] = D.TOWER_RANGE
            stats[D.US_ACQ] = D.TOWER_RANGE
        init_unit(S, g, u, L.b_team[b], ut, L.b_x[b], L.b_y[b], stats)
        S.ui[g, ST.UI_TIER, u] = L.b_tier[b]
        S.ui[g, ST.UI_LANE, u] = L.b_lane[b]
    # neutrals and boss
    S.gf[g, ST.GF_BOSS_HP_MULT] = 0.7 + 0.6 * rand01(S, g) if P.rand_boss else 1.0
    for c in range(L.n_camps):
        spawn_camp(S, L, g, c)
        S.gf[g, ST.GF_CAMP_RESPAWN_T + c] = 0.0
    spawn_boss(S, L, g)
    S.gf[g, ST.GF_BOSS_RESPAWN_T] = 0.0
    # lineup (paper O.2: random heroes from the pool)
    # the "new-hero" change adds D.NEW_HERO to the pool (index npool of the draw)
    npool = P.pool.shape[0] + S.gi[g, ST.GI_NEW_HERO]
    picks = S.si[0:npool]
    for i in range(npool):
        picks[i] = i
    if P.rand_lineup:
        for i in range(npool - 1, 0, -1):
            j = rand_int(S, g, i + 1)
            tmp = picks[i]
            picks[i] = picks[j]
            picks[j] = tmp
    for h in range(H):
        team = 0 if h < L.team_size else 1
        # a lineup chosen for this game slot (MobaEnv.set_lineups) replaces the pool's draw
        pick = P.pool[picks[h]] if picks[h] < P.pool.shape[0] else D.NEW_HERO
        S.hi[g, ST.HI_HERO_ID, h] = P.lineup[g, h] if P.lineup[g, h] >= 0 else pick
        S.ui[g, ST.UI_TEAM, h] = team
        S.ui[g, ST.UI_UTYPE, h] = D.UT_HERO
        S.hi[g, ST.HI_LEVEL, h] = 1
        S.hf[g, ST.HF_XP, h] = 0.0
        S.hf[g, ST.HF_GOLD, h] = D.START_GOLD
        S.hf[g, ST.HF_GOLD_SPENT_TOTAL, h] = 0.0
        S.hi[g, ST.HI_KILLS, h] = 0
        S.hi[g, ST.HI_DEATHS, h] = 0
        S.hi[g, ST.HI_LAST_HITS, h] = 0
        S.hi[g, ST.HI_DENIES, h] = 0
        S.hi[g, ST.HI_EXTRA_LIFE, h] = 0
        S.hf[g, ST.HF_BUYBACK_CD, h] = 0.0
        S.hf[g, ST.HF_AGGRO_T, h] = 0.0
        S.hi[g, ST.HI_PLAN_PTR, h] = 0
        # no standing order from the slot's previous game: a game depends on its own start state only (replays)
        S.hi[g, ST.HI_ORD_TYPE, h] = 0
        S.hi[g, ST.HI_ORD_TARGET, h] = -1
        S.hf[g, ST.HF_ORD_X, h] = 0.0
        S.hf[g, ST.HF_ORD_Y, h] = 0.0
        clear_prev_action(S, g, h)
        i = h % L.team_size
        if L.n_lanes == 1:
            S.hi[g, ST.HI_LANE_ASSIGN, h] = 0
        elif P.rand_lanes:
            S.hi[g, ST.HI_LANE_ASSIGN, h] = rand_int(S, g, 3)
        else:
            S.hi[g, ST.HI_LANE_ASSIGN, h] = (1, 0, 2, 0, 2)[i]
        hid = S.hi[g, ST.HI_HERO_ID, h]
        for k in range(4):
            S.hi[g, ST.HI_ABIL_ID + k, h] = HABIL[hid, k]
            S.hi[g, ST.HI_ABIL_LVL + k, h] = 0
            S.hf[g, ST.HF_ABIL_CD + k, h] = 0.0
        for k in range(D.N_ITEM_SLOTS):
            S.hi[g, ST.HI_ITEM_ID + k, h] = 0
            S.hi[g, ST.HI_ITEM_CHG + k, h] = 0
            S.hf[g, ST.HF_ITEM_CD + k, h] = 0.0
        # item plan (paper O.2: randomized builds): stat item, active item, two more stat items
        if P.rand_items:
            active = ACTIVE_CHOICES[rand_int(S, g, ACTIVE_CHOICES.shape[0])]
            s1 = STAT_CHOICES[rand_int(S, g, STAT_CHOICES.shape[0])]
            s2 = STAT_CHOICES[rand_int(S, g, STAT_CHOICES.shape[0])]
            s3 = STAT_CHOICES[rand_int(S, g, STAT_CHOICES.shape[0])]
        else:
            active = ACTIVE_CHOICES[hid % ACTIVE_CHOICES.shape[0]]
            s1 = STAT_CHOICES[0]
            s2 = STAT_CHOICES[1 + hid % 3]
            s3 = STAT_CHOICES[4 + hid % 3]
        if S.gi[g, ST.GI_NEW_ITEM]:  # the change item is bought first (it takes the first stat item's place)
            s1 = D.NEW_ITEM
        S.hi[g, ST.HI_ITEM_PLAN + 0, h] = s1
        S.hi[g, ST.HI_ITEM_PLAN + 1, h] = active
        S.hi[g, ST.HI_ITEM_PLAN + 2, h] = s2
        S.hi[g, ST.HI_ITEM_PLAN + 3, h] = s3
        S.hi[g, ST.HI_ITEM_PLAN + 4, h] = 0
        S.hi[g, ST.HI_ITEM_PLAN + 5, h] = 0
        zero_scratch(S, D.N_US_COLS)
        init_unit(S, g, h, team, D.UT_HERO, 0.0, 0.0, S.sf[0 : D.N_US_COLS])
        S.uf[g, ST.UF_VISION, h] = D.HERO_VISION
        S.uf[g, ST.UF_RNG, h] = HSTAT[hid, D.HS_RANGE]
        S.uf[g, ST.UF_BAT, h] = HSTAT[hid, D.HS_BAT]
        S.uf[g, ST.UF_MAX_HP, h] = 1.0
        S.uf[g, ST.UF_HP, h] = 1.0
        S.uf[g, ST.UF_MAX_MANA, h] = 1.0
        S.uf[g, ST.UF_MANA, h] = 1.0
        learn_abilities(S, g, h)  # level 1: one skill point, also sets the stats
        fx = D.FOUNTAIN_POS[team, 0] + (i - 2) * 60.0
        fy = D.FOUNTAIN_POS[team, 1] - (i - 2) * 60.0
        if P.rand_init:  # paper O.2: perturbed start
            fx += (rand01(S, g) - 0.5) * 400.0
            fy += (rand01(S, g) - 0.5) * 400.0
            S.uf[g, ST.UF_HP, h] = S.uf[g, ST.UF_MAX_HP, h] * (0.8 + 0.2 * rand01(S, g))
            S.uf[g, ST.UF_MANA, h] = S.uf[g, ST.UF_MAX_MANA, h] * (0.8 + 0.2 * rand01(S, g))
            S.hf[g, ST.HF_GOLD, h] = D.START_GOLD + 300.0 * (rand01(S, g) - 0.5)
        S.uf[g, ST.UF_X, h] = min(max(fx, 50.0), D.MAP_SIZE - 50.0)
        S.uf[g, ST.UF_Y, h] = min(max(fy, 50.0), D.MAP_SIZE - 50.0)
        S.hf[g, ST.HF_START_X, h] = D.FOUNTAIN_POS[team, 0]
        S.hf[g, ST.HF_START_Y, h] = D.FOUNTAIN_POS[team, 1]
        S.hf[g, ST.HF_RESPAWN_T, h] = 0.0
    dummy = S.srew  # purchases before the first step earn no reward (scratch, discarded)
    for h in range(H):
        scripted_purchases(S, g, h, dummy)
    spawn_wave(S, L, P, g)
    build_buckets(S, L, g)
    compute_vision(S, L, P, g)


# ---------------------------------------------------------------- actions
@njit(cache=True, _nrt=False, inline="always")
def ability_target(S, g, h, slot):
    """(target type, target rule, cast range) of the ability in ``slot``."""
    a = S.hi[g, ST.HI_ABIL_ID + slot, h]
    kind = ABIL[a, D.AB_KIND]
    rng = ABIL[a, D.AB_RANGE]
    if kind == D.AK_NUKE or kind == D.AK_STUN or kind == D.AK_SLOW:
        return TT_UNIT, R_ENEMY_SPELL, rng
    if kind == D.AK_HEAL:
        return TT_UNIT, R_ALLY_HERO, rng
    if kind == D.AK_AREA:
        return TT_POINT, R_NONE, rng
    if kind == D.AK_BLINK:
        return (
            TT_POINT,
            R_NONE,
            ABIL[a, D.AB_VAL] + ABIL[a, D.AB_VAL_LVL] * (S.hi[g, ST.HI_ABIL_LVL + slot, h] - 1),
        )
    return TT_NONE, R_NONE, 0.0


@njit(cache=True, _nrt=False, inline="always")
def item_target(S, g, h, slot):
    it = S.hi[g, ST.HI_ITEM_ID + slot, h]
    kind = ITEMS[it, D.IT_ACTIVE]
    if kind == D.IA_NUKE:
        return TT_UNIT, R_ENEMY_SPELL, ITEMS[it, D.IT_RANGE]
    if kind == D.IA_BLINK:
        return TT_POINT, R_NONE, ITEMS[it, D.IT_VAL]
    if kind == D.IA_STUN:
        return TT_UNIT, R_ENEMY_SPELL, ITEMS[it, D.IT_RANGE]
    return TT_NONE, R_NONE, 0.0


@njit(cache=True, _nrt=False, inline="always")
def consumable_wasted(S, g, h, active):
    """Would a salve (clarity) restore nothing: HP (mana) above ``D.RESTORE_BELOW`` or one already working?"""
    if active == D.IA_HEAL:
        return (
            S.uf[g, ST.UF_HP, h] >= D.RESTORE_BELOW * S.uf[g, ST.UF_MAX_HP, h]
            or S.uf[g, ST.UF_HEAL_T, h] > 0.0
        )
    if active == D.IA_MANA:
        return (
            S.uf[g, ST.UF_MANA, h] >= D.RESTORE_BELOW * S.uf[g, ST.UF_MAX_MANA, h]
            or S.uf[g, ST.UF_MREGEN_T, h] > 0.0
        )
    return False


@njit(cache=True, _nrt=False, inline="always")
def primary_info(S, g, h, kind, slot):
    """(available ignoring targets, target type, target rule, range) of a primary action for hero h."""
    alive = S.ui[g, ST.UI_ALIVE, h]
    if kind == ACT_NOOP:
        return True, TT_NONE, R_NONE, 0.0
    if kind == ACT_BUYBACK:
        ok = (
            (not alive)
            and S.hf[g, ST.HF_BUYBACK_CD, h] <= 0.0
            and S.hf[g, ST.HF_GOLD, h] >= buyback_cost(S, g, h)
        )
        return ok, TT_NONE, R_NONE, 0.0
    if not alive or S.uf[g, ST.UF_STUN_T, h] > 0.0:
        tt = TT_UNIT if kind == ACT_ATTACK else TT_POINT if kind == ACT_MOVE else TT_NONE
        return False, tt, R_NONE, 0.0
    if kind == ACT_MOVE:
        return True, TT_POINT, R_NONE, 0.0
    if kind == ACT_ATTACK:
        return True, TT_UNIT, R_ATTACK, 0.0
    if kind == ACT_ABILITY:
        a = S.hi[g, ST.HI_ABIL_ID + slot, h]
        tt, rule, rng = ability_target(S, g, h, slot)
        ok = (
            a > 0
            and S.hi[g, ST.HI_ABIL_LVL + slot, h] > 0
            and ABIL[a, D.AB_KIND] != D.AK_PASSIVE
            and S.hf[g, ST.HF_ABIL_CD + slot, h] <= 0.0
            and S.uf[g, ST.UF_MANA, h] >= ABIL[a, D.AB_MANA]
        )
        return ok, tt, rule, rng
    if kind == ACT_ITEM:
        it = S.hi[g, ST.HI_ITEM_ID + slot, h]
        tt, rule, rng = item_target(S, g, h, slot)
        ok = it > 0 and ITEMS[it, D.IT_ACTIVE] != D.IA_NONE and S.hf[g, ST.HF_ITEM_CD + slot, h] <= 0.0
        return ok and not consumable_wasted(S, g, h, ITEMS[it, D.IT_ACTIVE]), tt, rule, rng
    return False, TT_NONE, R_NONE, 0.0


@njit(cache=True, _nrt=False)
def target_ok(S, L, g, h, u, rule, rng, slack):
    """Can hero h use an action with target rule ``rule`` on unit u now (visible, alive, in range)?"""
    if u < 0 or not S.ui[g, ST.UI_ALIVE, u]:
        return False
    team = S.ui[g, ST.UI_TEAM, h]
    if not S.vis[g, team, u]:
        return False
    tu = S.ui[g, ST.UI_TEAM, u]
    ut = S.ui[g, ST.UI_UTYPE, u]
    if rule == R_ATTACK:
        if u == h:
            return False
        if tu != team:
            return vulnerable(S, L, g, u)
        return (ut == D.UT_MELEE or ut == D.UT_RANGED) and S.uf[g, ST.UF_HP, u] < D.DENY_HP_FRAC * S.uf[
            g, ST.UF_MAX_HP, u
        ]
    r = rng + slack
    if rule == R_ENEMY_SPELL:
        return tu != team and not is_building(ut) and dist2(S, g, h, u) <= r * r
    if rule == R_ALLY_HERO:  # heals: a hero that is hurt (D.RESTORE_BELOW)
        return (
            tu == team
            and u < L.n_heroes
            and dist2(S, g, h, u) <= r * r
            and S.uf[g, ST.UF_HP, u] < D.RESTORE_BELOW * S.uf[g, ST.UF_MAX_HP, u]
        )
    return False


@njit(cache=True, _nrt=False)
def offset_point(S, g, h, offset, rng):
    """The 9x9 offset grid around the hero (paper F: offsets relative to the caster), clamped to ``rng``."""
    ox = (offset % 9 - 4) * D.OFFSET_CELL
    oy = (offset // 9 - 4) * D.OFFSET_CELL
    if rng > 0.0:
        d = np.sqrt(ox * ox + oy * oy)
        if d > rng:
            ox *= rng / d
            oy *= rng / d
    px = min(max(S.uf[g, ST.UF_X, h] + ox, 1.0), D.MAP_SIZE - 1.0)
    py = min(max(S.uf[g, ST.UF_Y, h] + oy, 1.0), D.MAP_SIZE - 1.0)
    return px, py


@njit(cache=True, _nrt=False)
def cast_effect(S, L, P, g, h, kind, value, dur, slow, radius, u, px, py, rew):
    """Apply an ability-kind effect (shared by abilities and active items)."""
    if kind == D.AK_NUKE:
        deal_damage(S, L, P, g, h, u, value, True, rew)
    elif kind == D.AK_STUN:
        S.uf[g, ST.UF_STUN_T, u] = max(S.uf[g, ST.UF_STUN_T, u], dur * P.fps)
        deal_damage(S, L, P, g, h, u, value, True, rew)
    elif kind == D.AK_SLOW:
        S.uf[g, ST.UF_SLOW_T, u] = max(S.uf[g, ST.UF_SLOW_T, u], dur * P.fps)
        S.uf[g, ST.UF_SLOW_FRAC, u] = slow
        deal_damage(S, L, P, g, h, u, value, True, rew)
    elif kind == D.AK_AREA:
        r2 = radius * radius
        team = S.ui[g, ST.UI_TEAM, h]
        for v in range(L.n_units):
            if (
                S.ui[g, ST.UI_ALIVE, v]
                and S.ui[g, ST.UI_TEAM, v] != team
                and not is_building(S.ui[g, ST.UI_UTYPE, v])
            ):
                dx = S.uf[g, ST.UF_X, v] - px
                dy = S.uf[g, ST.UF_Y, v] - py
                if dx * dx + dy * dy <= r2:
                    deal_damage(S, L, P, g, h, v, value, True, rew)
    elif kind == D.AK_HEAL:
        S.uf[g, ST.UF_HP, u] = min(S.uf[g, ST.UF_MAX_HP, u], S.uf[g, ST.UF_HP, u] + value)
    elif kind == D.AK_BLINK:
        if walkable(L, px, py):
            S.uf[g, ST.UF_X, h] = px
            S.uf[g, ST.UF_Y, h] = py
    elif kind == D.AK_BUFF:
        S.uf[g, ST.UF_BUFF_T, h] = dur * P.fps
        S.uf[g, ST.UF_BUFF_DMG, h] = value


@njit(cache=True, _nrt=False)
def execute_action(S, L, P, g, h, kind, slot, tslot, offset, rew):
    """Carry out an order at its delay frame; returns False when it became invalid (counted as invalid)."""
    ok, tt, rule, rng = primary_info(S, g, h, kind, slot)
    if not ok:
        return False
    u = -1
    if tt == TT_UNIT or tt == TT_UNIT_OFFSET:
        u = S.slot_unit[g, h, tslot]
        if not target_ok(S, L, g, h, u, rule, rng, 100.0):
            return False
    if kind == ACT_NOOP:
        return True
    if kind == ACT_MOVE:
        if S.gi[g, ST.GI_MIRROR_MOVES]:  # the "canary-mirror" change: the 9x9 grid reflected through the hero
            offset = 80 - offset
        px, py = offset_point(S, g, h, offset, 0.0)
        S.hi[g, ST.HI_ORD_TYPE, h] = 1
        S.hf[g, ST.HF_ORD_X, h] = px
        S.hf[g, ST.HF_ORD_Y, h] = py
        S.ui[g, ST.UI_TARGET, h] = -1
        return True
    if kind == ACT_ATTACK:
        S.hi[g, ST.HI_ORD_TYPE, h] = 2
        S.hi[g, ST.HI_ORD_TARGET, h] = u
        S.ui[g, ST.UI_TARGET, h] = u
        return True
    if kind == ACT_BUYBACK:
        S.hf[g, ST.HF_GOLD, h] -= buyback_cost(S, g, h)
        S.hf[g, ST.HF_BUYBACK_CD, h] = D.BUYBACK_COOLDOWN_S * P.fps
        spawn_hero(S, L, P, g, h)
        return True
    px, py = offset_point(S, g, h, offset, rng) if tt == TT_POINT else (0.0, 0.0)
    if kind == ACT_ABILITY:
        a = S.hi[g, ST.HI_ABIL_ID + slot, h]
        lv = S.hi[g, ST.HI_ABIL_LVL + slot, h]
        value = ABIL[a, D.AB_VAL] + ABIL[a, D.AB_VAL_LVL] * (lv - 1)
        S.uf[g, ST.UF_MANA, h] -= ABIL[a, D.AB_MANA]
        S.hf[g, ST.HF_ABIL_CD + slot, h] = ABIL[a, D.AB_CD] * P.fps
        cast_effect(
            S,
            L,
            P,
            g,
            h,
            ABIL[a, D.AB_KIND],
            value,
            ABIL[a, D.AB_DUR],
            ABIL[a, D.AB_SLOW],
            ABIL[a, D.AB_RADIUS],
            u,
            px,
            py,
            rew,
        )
        return True
    # item
    it = S.hi[g, ST.HI_ITEM_ID + slot, h]
    ia = ITEMS[it, D.IT_ACTIVE]
    S.hf[g, ST.HF_ITEM_CD + slot, h] = ITEMS[it, D.IT_CD] * P.fps
    if ia == D.IA_HEAL:
        S.uf[g, ST.UF_HEAL_T, h] = 8.0 * P.fps
        S.uf[g, ST.UF_HEAL_RATE, h] = ITEMS[it, D.IT_VAL] / (8.0 * P.fps)
    elif ia == D.IA_MANA:
        S.uf[g, ST.UF_MREGEN_T, h] = 12.0 * P.fps
        S.uf[g, ST.UF_MREGEN_RATE, h] = ITEMS[it, D.IT_VAL] / (12.0 * P.fps)
    elif ia == D.IA_NUKE:
        cast_effect(S, L, P, g, h, D.AK_NUKE, ITEMS[it, D.IT_VAL], 0.0, 0.0, 0.0, u, 0.0, 0.0, rew)
    elif ia == D.IA_BLINK:
        cast_effect(S, L, P, g, h, D.AK_BLINK, 0.0, 0.0, 0.0, 0.0, -1, px, py, rew)
    elif ia == D.IA_STUN:
        cast_effect(S, L, P, g, h, D.AK_STUN, ITEMS[it, D.IT_VAL], D.ITEM_STUN_S, 0.0, 0.0, u, 0.0, 0.0, rew)
    if ITEMS[it, D.IT_CHARGES] > 0:
        rew[h, C_CONSUMED] += ITEMS[it, D.IT_COST] / ITEMS[it, D.IT_CHARGES]  # the gold a charge cost
        S.hi[g, ST.HI_ITEM_CHG + slot, h] -= 1
        if S.hi[g, ST.HI_ITEM_CHG + slot, h] <= 0:
            S.hi[g, ST.HI_ITEM_ID + slot, h] = 0
            S.hi[g, ST.HI_ITEM_CHG + slot, h] = 0
    return True


# ---------------------------------------------------------------- per-tick unit update
@njit(cache=True, _nrt=False, inline="always")
def move_toward(S, L, g, u, tx, ty, dt_speed):
    dx = tx - S.uf[g, ST.UF_X, u]
    dy = ty - S.uf[g, ST.UF_Y, u]
    d = np.sqrt(dx * dx + dy * dy)
    if d < 1e-6:
        return True
    step = dt_speed
    if S.uf[g, ST.UF_SLOW_T, u] > 0.0:
        step *= 1.0 - S.uf[g, ST.UF_SLOW_FRAC, u]
    if step >= d:
        nx, ny = tx, ty
    else:
        nx = S.uf[g, ST.UF_X, u] + dx / d * step
        ny = S.uf[g, ST.UF_Y, u] + dy / d * step
    if walkable(L, nx, ny):
        S.uf[g, ST.UF_X, u] = nx
        S.uf[g, ST.UF_Y, u] = ny
    elif walkable(L, nx, S.uf[g, ST.UF_Y, u]):  # slide along the obstacle
        S.uf[g, ST.UF_X, u] = nx
    elif walkable(L, S.uf[g, ST.UF_X, u], ny):
        S.uf[g, ST.UF_Y, u] = ny
    return step >= d


@njit(cache=True, _nrt=False, inline="always")
def attack_or_chase(S, L, P, g, u, t, rew):
    r = S.uf[g, ST.UF_RNG, u] + 25.0
    if dist2(S, g, u, t) <= r * r:
        if S.uf[g, ST.UF_ATK_CD, u] <= 0.0:
            dmg = S.uf[g, ST.UF_DMG, u]
            if S.uf[g, ST.UF_BUFF_T, u] > 0.0:
                dmg += S.uf[g, ST.UF_BUFF_DMG, u]
            S.uf[g, ST.UF_ATK_CD, u] = S.uf[g, ST.UF_BAT, u] * P.fps
            deal_damage(S, L, P, g, u, t, dmg, False, rew)
    elif S.uf[g, ST.UF_SPEED, u] > 0.0:
        move_toward(S, L, g, u, S.uf[g, ST.UF_X, t], S.uf[g, ST.UF_Y, t], S.uf[g, ST.UF_SPEED, u] / P.fps)


@njit(cache=True, _nrt=False, inline="always")
def update_unit(S, L, P, g, u, rew):
    if S.uf[g, ST.UF_ATK_CD, u] > 0.0:
        S.uf[g, ST.UF_ATK_CD, u] -= 1.0
    if S.uf[g, ST.UF_SLOW_T, u] > 0.0:
        S.uf[g, ST.UF_SLOW_T, u] -= 1.0
    if S.uf[g, ST.UF_BUFF_T, u] > 0.0:
        S.uf[g, ST.UF_BUFF_T, u] -= 1.0
    if S.uf[g, ST.UF_STUN_T, u] > 0.0:
        S.uf[g, ST.UF_STUN_T, u] -= 1.0
        return
    ut = S.ui[g, ST.UI_UTYPE, u]
    t = S.ui[g, ST.UI_TARGET, u]
    valid_t = t >= 0 and S.ui[g, ST.UI_ALIVE, t]
    if ut == D.UT_HERO:
        o = S.hi[g, ST.HI_ORD_TYPE, u]
        if o == 1:
            if move_toward(
                S, L, g, u, S.hf[g, ST.HF_ORD_X, u], S.hf[g, ST.HF_ORD_Y, u], S.uf[g, ST.UF_SPEED, u] / P.fps
            ):
                S.hi[g, ST.HI_ORD_TYPE, u] = 0
        elif valid_t and (o == 2 or dist2(S, g, u, t) <= (S.uf[g, ST.UF_RNG, u] + 75.0) ** 2):
            if S.vis[g, S.ui[g, ST.UI_TEAM, u], t]:
                attack_or_chase(S, L, P, g, u, t, rew)
            else:
                S.hi[g, ST.HI_ORD_TYPE, u] = 0
                S.ui[g, ST.UI_TARGET, u] = -1
        elif o == 2:
            S.hi[g, ST.HI_ORD_TYPE, u] = 0
        return
    if ut == D.UT_MELEE or ut == D.UT_RANGED:
        if valid_t:
            attack_or_chase(S, L, P, g, u, t, rew)
            return
        li = S.ui[g, ST.UI_LANE, u]
        w = S.ui[g, ST.UI_WP, u]
        if w > 2 or w < 0:
            return
        idx = w if S.ui[g, ST.UI_TEAM, u] == 0 else 2 - w
        if move_toward(
            S, L, g, u, L.lane_pts[li, idx, 0], L.lane_pts[li, idx, 1], S.uf[g, ST.UF_SPEED, u] / P.fps
        ):
            S.ui[g, ST.UI_WP, u] = w + 1
        return
    if ut == D.UT_TOWER:
        if valid_t:
            attack_or_chase(S, L, P, g, u, t, rew)
        return
    if ut == D.UT_NEUTRAL or ut == D.UT_BOSS:
        dxh = S.uf[g, ST.UF_X, u] - S.uf[g, ST.UF_HOME_X, u]
        dyh = S.uf[g, ST.UF_Y, u] - S.uf[g, ST.UF_HOME_Y, u]
        if dxh * dxh + dyh * dyh > D.LEASH_RANGE * D.LEASH_RANGE:
            S.ui[g, ST.UI_TARGET, u] = -1
            S.ui[g, ST.UI_LAST_ATTACKER, u] = -1
            valid_t = False
        if valid_t:
            attack_or_chase(S, L, P, g, u, t, rew)
        elif dxh * dxh + dyh * dyh > 1.0:
            if move_toward(
                S,
                L,
                g,
                u,
                S.uf[g, ST.UF_HOME_X, u],
                S.uf[g, ST.UF_HOME_Y, u],
                S.uf[g, ST.UF_SPEED, u] / P.fps,
            ):
                S.uf[g, ST.UF_HP, u] = S.uf[g, ST.UF_MAX_HP, u]  # back home: reset like a Dota camp


@njit(cache=True, _nrt=False, inline="always")
def update_hero_economy(S, L, P, g, h, rew):
    """Regeneration, fountain, passive gold, timers, respawn (per tick)."""
    if S.hf[g, ST.HF_BUYBACK_CD, h] > 0.0:
        S.hf[g, ST.HF_BUYBACK_CD, h] -= 1.0
    if S.hf[g, ST.HF_AGGRO_T, h] > 0.0:
        S.hf[g, ST.HF_AGGRO_T, h] -= 1.0
    for k in range(4):
        if S.hf[g, ST.HF_ABIL_CD + k, h] > 0.0:
            S.hf[g, ST.HF_ABIL_CD + k, h] -= 1.0
    for k in range(D.N_ACTIVE_SLOTS + 1):  # + the change item's slot (D.NEW_ITEM_SLOT)
        if S.hf[g, ST.HF_ITEM_CD + k, h] > 0.0:
            S.hf[g, ST.HF_ITEM_CD + k, h] -= 1.0
    add_gold(S, g, h, D.PASSIVE_GOLD_PER_S / P.fps, rew)
    if not S.ui[g, ST.UI_ALIVE, h]:
        S.hf[g, ST.HF_RESPAWN_T, h] -= 1.0
        if S.hf[g, ST.HF_RESPAWN_T, h] <= 0.0:
            spawn_hero(S, L, P, g, h)
        return
    hp_gain = S.uf[g, ST.UF_HP_REGEN, h] / P.fps
    mp_gain = S.uf[g, ST.UF_MANA_REGEN, h] / P.fps
    if S.uf[g, ST.UF_HEAL_T, h] > 0.0:
        S.uf[g, ST.UF_HEAL_T, h] -= 1.0
        hp_gain += S.uf[g, ST.UF_HEAL_RATE, h]
    if S.uf[g, ST.UF_MREGEN_T, h] > 0.0:
        S.uf[g, ST.UF_MREGEN_T, h] -= 1.0
        mp_gain += S.uf[g, ST.UF_MREGEN_RATE, h]
    team = S.ui[g, ST.UI_TEAM, h]
    fx = S.uf[g, ST.UF_X, h] - D.FOUNTAIN_POS[team, 0]
    fy = S.uf[g, ST.UF_Y, h] - D.FOUNTAIN_POS[team, 1]
    if fx * fx + fy * fy < 1000.0 * 1000.0:  # fountain: 5% per second
        hp_gain += 0.05 * S.uf[g, ST.UF_MAX_HP, h] / P.fps
        mp_gain += 0.05 * S.uf[g, ST.UF_MAX_MANA, h] / P.fps
    S.uf[g, ST.UF_HP, h] = min(S.uf[g, ST.UF_MAX_HP, h], S.uf[g, ST.UF_HP, h] + hp_gain)
    S.uf[g, ST.UF_MANA, h] = min(S.uf[g, ST.UF_MAX_MANA, h], S.uf[g, ST.UF_MANA, h] + mp_gain)


@njit(cache=True, _nrt=False)
def tick_world(S, L, P, g, rew):
    """Timers that are not per unit: waves, camp and boss respawns."""
    wave_ticks = S.gi[g, ST.GI_WAVE_TICKS]
    if S.gi[g, ST.GI_TICK] % wave_ticks == 0 and S.gi[g, ST.GI_TICK] > 0:
        spawn_wave(S, L, P, g)
    for c in range(L.n_camps):
        if S.gf[g, ST.GF_CAMP_RESPAWN_T + c] > 0.0:
            S.gf[g, ST.GF_CAMP_RESPAWN_T + c] -= 1.0
            if S.gf[g, ST.GF_CAMP_RESPAWN_T + c] <= 0.0:
                alive = False
                for i in range(L.neu_start, L.boss):
                    if L.n_camp[i - L.neu_start] == c and S.ui[g, ST.UI_ALIVE, i]:
                        alive = True
                if not alive:
                    spawn_camp(S, L, g, c)
    if S.gf[g, ST.GF_BOSS_RESPAWN_T] > 0.0:
        S.gf[g, ST.GF_BOSS_RESPAWN_T] -= 1.0
        if S.gf[g, ST.GF_BOSS_RESPAWN_T] <= 0.0:
            spawn_boss(S, L, g)


# ---------------------------------------------------------------- the decision step
@njit(cache=True, _nrt=False)
def step_game(S, L, P, g, actions, act_kind, act_slot, amask, tmask, rew, invalid):
    """Advance game g by one decision (frameskip ticks). actions [A, 4] (primary, delay, target slot, offset)."""
    H = L.n_heroes
    n_prim = act_kind.shape[0]
    n_tgt = tmask.shape[2]
    nb = L.bld_end - L.bld_start
    hp0 = S.sf[0:H]
    mp0 = S.sf[H : 2 * H]
    bhp0 = S.sf[2 * H : 2 * H + nb]
    balive0 = S.sb[0:nb]
    pend = S.sb[nb : nb + H]
    for h in range(H):
        hp0[h] = health_f(S.uf[g, ST.UF_HP, h] / S.uf[g, ST.UF_MAX_HP, h]) if S.ui[g, ST.UI_ALIVE, h] else 0.0
        mp0[h] = S.uf[g, ST.UF_MANA, h] / S.uf[g, ST.UF_MAX_MANA, h] if S.ui[g, ST.UI_ALIVE, h] else 0.0
    for b in range(nb):
        u = L.bld_start + b
        bhp0[b] = S.uf[g, ST.UF_HP, u] / S.uf[g, ST.UF_MAX_HP, u]
        balive0[b] = S.ui[g, ST.UI_ALIVE, u]
    # validate against the masks the agent saw; keep the order for its delay frame
    for h in range(H):
        pend[h] = False
        p = actions[h, 0]
        if p == ACT_HOLD:
            continue  # no decision this step: the hero keeps its order, and its previous action stays
        d = actions[h, 1]
        ts = actions[h, 2]
        off = actions[h, 3]
        ok = 0 <= p < n_prim and 0 <= d < P.frameskip and 0 <= off < 81
        if ok:
            ok = amask[h, p]
        if ok and (act_kind[p] == ACT_ATTACK or tmask[h, p, :].any()):
            ok = 0 <= ts < n_tgt and tmask[h, p, ts]
        if ok:
            pend[h] = act_kind[p] != ACT_NOOP
            S.hi[g, ST.HI_PREV_ACTION + 0, h] = p
            S.hi[g, ST.HI_PREV_ACTION + 1, h] = d
            S.hi[g, ST.HI_PREV_ACTION + 2, h] = ts
            S.hi[g, ST.HI_PREV_ACTION + 3, h] = off
        else:
            invalid[h] += 1
            clear_prev_action(S, g, h)
    # Whoever acts or strikes first within a tick wins the races (last hits, trades at low HP), so the order
    # alternates: heroes' orders every other decision step, units every other tick (team 0's units have the
    # lower indices). The order depends on the tick only, which keeps the game deterministic.
    orders_reversed = (S.gi[g, ST.GI_TICK] // P.frameskip) % 2 == 1
    for f in range(P.frameskip):
        if f == 0:
            build_buckets(S, L, g)
            acquire_targets(S, L, g)
        for j in range(H):
            h = H - 1 - j if orders_reversed else j
            if pend[h] and actions[h, 1] == f:
                p = actions[h, 0]
                if not execute_action(
                    S, L, P, g, h, act_kind[p], act_slot[p], actions[h, 2], actions[h, 3], rew
                ):
                    invalid[h] += 1
                    clear_prev_action(S, g, h)
        units_reversed = S.gi[g, ST.GI_TICK] % 2 == 1
        for j in range(L.n_units):
            u = L.n_units - 1 - j if units_reversed else j
            if S.ui[g, ST.UI_ALIVE, u]:
                update_unit(S, L, P, g, u, rew)
        for h in range(H):
            update_hero_economy(S, L, P, g, h, rew)
        S.gi[g, ST.GI_TICK] += 1
        tick_world(S, L, P, g, rew)
        if S.gi[g, ST.GI_DONE]:
            break
        if S.gi[g, ST.GI_TICK] >= P.time_limit_ticks:
            S.gi[g, ST.GI_DONE] = 1
            S.gi[g, ST.GI_WINNER] = time_limit_winner(S, L, g) if P.tiebreak else -1
            break
    for h in range(H):
        scripted_purchases(S, g, h, rew)
    build_buckets(S, L, g)
    compute_vision(S, L, P, g)
    # dense components (paper Table 6): health via f(hp fraction), mana fraction, buildings, ancient
    for h in range(H):
        hp1 = health_f(S.uf[g, ST.UF_HP, h] / S.uf[g, ST.UF_MAX_HP, h]) if S.ui[g, ST.UI_ALIVE, h] else 0.0
        mp1 = S.uf[g, ST.UF_MANA, h] / S.uf[g, ST.UF_MAX_MANA, h] if S.ui[g, ST.UI_ALIVE, h] else 0.0
        rew[h, C_HEALTH] += hp1 - hp0[h]
        rew[h, C_MANA] += mp1 - mp0[h]
    for b in range(nb):
        u = L.bld_start + b
        lost = bhp0[b] - S.uf[g, ST.UF_HP, u] / S.uf[g, ST.UF_MAX_HP, u]
        died = balive0[b] and not S.ui[g, ST.UI_ALIVE, u]
        if lost <= 0.0 and not died:
            continue
        ut = L.b_utype[b]
        if ut == D.UT_ANCIENT:
            comp = C_ANCIENT_HP
            val = lost
        else:
            comp = C_BARRACKS if ut == D.UT_BARRACKS else C_TOWER_T1 + L.b_tier[b] - 1
            val = (2.0 / 3.0) * lost + ((1.0 / 3.0) if died else 0.0)
        earner = 1 - L.b_team[b]
        for h in range(H):
            if S.ui[g, ST.UI_TEAM, h] == earner:
                rew[h, comp] += val
                # the solo share of the push: the building's worth again, to the heroes who were there
                if S.ui[g, ST.UI_ALIVE, h] and dist2(S, g, h, u) <= D.PUSH_RADIUS * D.PUSH_RADIUS:
                    rew[h, C_BUILDING_NEAR] += val
    step_s = P.frameskip / P.fps
    for h in range(H):
        if S.ui[g, ST.UI_ALIVE, h] and off_lane(S, L, g, h):
            rew[h, C_OFF_LANE] += step_s
    if S.gi[g, ST.GI_DONE] and S.gi[g, ST.GI_WINNER] >= 0:
        for h in range(H):
            rew[h, C_WIN] += 1.0 if S.ui[g, ST.UI_TEAM, h] == S.gi[g, ST.GI_WINNER] else -1.0
    if S.gi[g, ST.GI_SWAP_CREDIT]:
        swap_team_credit(L, rew)


@njit(cache=True, _nrt=False)
def off_lane(S, L, g, h):
    """Hero h is away from its assigned lane (``lane_assign``; the only lane on a one-lane map): farther than
    LANE_WIDTH from the lane's path, or inside its own base while no enemy is there, and outside the enemy base
    (paper O.2, lane assignments). The enemy base is spared so that pushing its buildings costs nothing. The own
    base counts as off the lane although every lane's path starts in it: sparing it taught heroes to wait there
    against the bots (benchmarks/RESULTS.md, 5v5 runs 2 and 15); defending it, with an enemy inside, is free. The
    walk out of the base after each spawn is about 2,600 units, some nine seconds."""
    x = S.uf[g, ST.UF_X, h]
    y = S.uf[g, ST.UF_Y, h]
    team = S.ui[g, ST.UI_TEAM, h]
    if in_base(x, y, 1 - team):
        return False
    if in_base(x, y, team) and not enemy_in_base(S, L, g, team):
        return True
    li = S.hi[g, ST.HI_LANE_ASSIGN, h] if L.n_lanes > 1 else 0
    for s in range(L.lane_pts.shape[1] - 1):
        ax = L.lane_pts[li, s, 0]
        ay = L.lane_pts[li, s, 1]
        bx = L.lane_pts[li, s + 1, 0] - ax
        by = L.lane_pts[li, s + 1, 1] - ay
        t = ((x - ax) * bx + (y - ay) * by) / (bx * bx + by * by)
        t = min(max(t, 0.0), 1.0)
        dx = x - ax - t * bx
        dy = y - ay - t * by
        if dx * dx + dy * dy <= D.LANE_WIDTH * D.LANE_WIDTH:
            return False
    return True


@njit(cache=True, _nrt=False)
def in_base(x, y, team):
    """(x, y) is within BASE_RADIUS of ``team``'s fountain."""
    dx = x - D.FOUNTAIN_POS[team, 0]
    dy = y - D.FOUNTAIN_POS[team, 1]
    return dx * dx + dy * dy <= D.BASE_RADIUS * D.BASE_RADIUS


@njit(cache=True, _nrt=False)
def enemy_in_base(S, L, g, team):
    """A living enemy hero or lane creep stands in ``team``'s base."""
    for u in range(L.n_units):
        if u >= L.n_heroes and u < L.creep_start:
            continue  # buildings and neutrals never enter a base
        if S.ui[g, ST.UI_ALIVE, u] and S.ui[g, ST.UI_TEAM, u] == 1 - team:
            if in_base(S.uf[g, ST.UF_X, u], S.uf[g, ST.UF_Y, u], team):
                return True
    return False


@njit(cache=True, _nrt=False)
def swap_team_credit(L, rew):
    """The "canary-swapped-credit" change: each hero is credited with what the enemy hero in its slot earned
    (win/loss included), as a broken reward patch would. The game itself, and so who wins it, is unchanged."""
    k = L.team_size
    for h in range(k):
        for c in range(rew.shape[1]):
            own = rew[h, c]
            rew[h, c] = rew[h + k, c]
            rew[h + k, c] = own


@njit(cache=True, _nrt=False)
def building_hp_taken(S, L, g, team):
    """Enemy building HP that ``team`` has taken: the lost fraction of each enemy building summed, a destroyed
    one counting 1 (the tiebreak's second criterion)."""
    taken = 0.0
    for b in range(L.bld_start, L.bld_end):
        if S.ui[g, ST.UI_TEAM, b] != 1 - team:
            continue
        if S.ui[g, ST.UI_ALIVE, b]:
            taken += 1.0 - S.uf[g, ST.UF_HP, b] / max(S.uf[g, ST.UF_MAX_HP, b], 1.0)
        else:
            taken += 1.0
    return taken


@njit(cache=True, _nrt=False)
def time_limit_winner(S, L, g):
    """Who wins a game that reaches the time limit (``game.time_limit_result = "tiebreak"``): the team that
    destroyed more buildings, then took more enemy building HP (fractions summed), then made more hero kills,
    then has more net worth; -1 (a draw) only when all four are equal. Scalars only: kernels run without NRT."""
    destroyed0 = S.gi[g, ST.GI_TOWERS_DESTROYED] + S.gi[g, ST.GI_BARRACKS_DESTROYED]
    destroyed1 = S.gi[g, ST.GI_TOWERS_DESTROYED + 1] + S.gi[g, ST.GI_BARRACKS_DESTROYED + 1]
    if destroyed0 != destroyed1:
        return 0 if destroyed0 > destroyed1 else 1
    damage0 = building_hp_taken(S, L, g, 0) - building_hp_taken(S, L, g, 1)
    if abs(damage0) > 1e-9:
        return 0 if damage0 > 0 else 1
    kills0, kills1 = S.gi[g, ST.GI_KILLS_T], S.gi[g, ST.GI_KILLS_T + 1]
    if kills0 != kills1:
        return 0 if kills0 > kills1 else 1
    networth0 = 0.0
    for h in range(L.n_heroes):
        networth0 += net_worth(S, g, h) if S.ui[g, ST.UI_TEAM, h] == 0 else -net_worth(S, g, h)
    if abs(networth0) > 1e-6:
        return 0 if networth0 > 0 else 1
    return -1


@njit(cache=True, _nrt=False)
def write_stats(S, L, g, stats):
    for t in range(2):
        stats[ST_KILLS, t] = S.gi[g, ST.GI_KILLS_T + t]
        stats[ST_TOWERS, t] = S.gi[g, ST.GI_TOWERS_DESTROYED + t]
        stats[ST_BARRACKS, t] = S.gi[g, ST.GI_BARRACKS_DESTROYED + t]
        stats[ST_BOSS, t] = S.gi[g, ST.GI_BOSS_KILLS + t]
        stats[ST_LAST_HITS, t] = S.gi[g, ST.GI_TEAM_LAST_HITS + t]
        stats[ST_DENIES, t] = S.gi[g, ST.GI_TEAM_DENIES + t]
        stats[ST_DEATHS, t] = 0.0
        stats[ST_NETWORTH, t] = 0.0
        stats[ST_BUILDING_HP, t] = building_hp_taken(S, L, g, t)
    for h in range(L.n_heroes):
        t = S.ui[g, ST.UI_TEAM, h]
        stats[ST_DEATHS, t] += S.hi[g, ST.HI_DEATHS, h]
        stats[ST_NETWORTH, t] += net_worth(S, g, h)


@njit(cache=True, _nrt=False)
def step_all(
    S, L, P, actions, act_kind, act_slot, amask, tmask, rew, invalid, done, winner, game_time, stats
):
    """Step every game; a finished game reports its final figures and keeps its final state (``done[g]``) until
    the caller resets it (``reset_games``: env.py keeps the final frame first)."""
    for g in range(S.rng.shape[0]):
        step_game(S, L, P, g, actions[g], act_kind, act_slot, amask[g], tmask[g], rew[g], invalid[g])
        done[g] = S.gi[g, ST.GI_DONE]
        winner[g] = S.gi[g, ST.GI_WINNER] if S.gi[g, ST.GI_DONE] else -1
        game_time[g] = S.gi[g, ST.GI_TICK] / P.fps
        write_stats(S, L, g, stats[g])


@njit(cache=True, _nrt=False)
def refresh_vision_all(S, L, P):
    """Recompute buckets and fog of war for every game (after the state was edited from Python)."""
    for g in range(S.rng.shape[0]):
        build_buckets(S, L, g)
        compute_vision(S, L, P, g)


@njit(cache=True, _nrt=False)
def reset_all(S, L, P):
    for g in range(S.rng.shape[0]):
        reset_game(S, L, P, g)


@njit(cache=True, _nrt=False)
def reset_games(S, L, P, games):
    """Start a new game in every slot where ``games`` (bool [G]) is True."""
    for g in range(S.rng.shape[0]):
        if games[g]:
            reset_game(S, L, P, g)
