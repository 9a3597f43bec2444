"""The feature functions (numba): the value of one feature code for a unit, the controlled hero, the game, the
previous action, an ability or item slot, or a terrain cell. One branch per code of ``registry.py``."""

from __future__ import annotations

import numpy as np
from numba import njit

from fivectl.sim import core as C
from fivectl.sim import data as D
from fivectl.sim import state as ST
from fivectl.sim.observe.registry import KM


@njit(cache=True, _nrt=False, inline="always")
def unit_team_feature(code, S, L, P, X, g, team, u, fogged):
    """Feature ``code`` of unit u as seen by team ``team``: every unit feature that does not depend on which hero
    of the team observes (those are in ``unit_observer_feature``; this returns 0 for them). Computed once per
    team and unit, then copied to every teammate's slot. ``fogged``: an enemy hero shown at its last seen state.
    Inlined into its callers, so reading the state tuple here costs no more than passing the arrays."""
    uf, ui, hi, ls = S.uf, S.ui, S.hi, S.ls
    n_heroes = L.n_heroes
    if code == 0:
        return ui[g, ST.UI_UTYPE, u]
    if code == 1:
        return hi[g, ST.HI_HERO_ID, u] + 1 if u < n_heroes else 0
    if code == 2:
        return 1.0 if ui[g, ST.UI_TEAM, u] != team else 0.0
    if code == 6:
        return ls[g, ST.LS_HP, team, u] if fogged else uf[g, ST.UF_HP, u]
    if code == 7:
        return ls[g, ST.LS_MAX_HP, team, u] if fogged else uf[g, ST.UF_MAX_HP, u]
    if code == 8:
        if fogged:
            return ls[g, ST.LS_HP, team, u] / max(ls[g, ST.LS_MAX_HP, team, u], 1.0)
        return uf[g, ST.UF_HP, u] / max(uf[g, ST.UF_MAX_HP, u], 1.0)
    if code == 9:
        return ls[g, ST.LS_MANA, team, u] if fogged else uf[g, ST.UF_MANA, u]
    if code == 10:
        if fogged:
            return ls[g, ST.LS_MANA, team, u] / max(ls[g, ST.LS_MAX_MANA, team, u], 1.0)
        return uf[g, ST.UF_MANA, u] / max(uf[g, ST.UF_MAX_MANA, u], 1.0)
    if code == 11:
        if u >= n_heroes:
            return 0.0
        return ls[g, ST.LS_LEVEL, team, u] if fogged else hi[g, ST.HI_LEVEL, u]
    if code == 12:
        return uf[g, ST.UF_DMG, u]
    if code == 13:
        return uf[g, ST.UF_ARMOR, u]
    if code == 14:
        return uf[g, ST.UF_RNG, u] * KM
    if code == 15:
        return uf[g, ST.UF_SPEED, u] * KM
    if code == 16:
        return 1.0 if uf[g, ST.UF_STUN_T, u] > 0.0 and not fogged else 0.0
    if code == 17:
        return 1.0 if uf[g, ST.UF_SLOW_T, u] > 0.0 and not fogged else 0.0
    if code == 18:
        return 1.0 if uf[g, ST.UF_BUFF_T, u] > 0.0 and not fogged else 0.0
    if code == 19:
        return 0.0 if fogged else 1.0
    if code == 20:
        return (S.gi[g, ST.GI_TICK] - ls[g, ST.LS_TICK, team, u]) / P.fps if fogged else 0.0
    if code == 23:
        return ui[g, ST.UI_TIER, u]
    if code == 24:
        return ui[g, ST.UI_LANE, u] + 1
    if code == 27:
        return 1.0 if X.vuln[u] else 0.0
    if code == 28:
        return (ls[g, ST.LS_X, team, u] if fogged else uf[g, ST.UF_X, u]) * KM
    if code == 29:
        return (ls[g, ST.LS_Y, team, u] if fogged else uf[g, ST.UF_Y, u]) * KM
    if code == 30:
        return hi[g, ST.HI_EXTRA_LIFE, u] if u < n_heroes else 0.0
    if code == 31:
        ut = ui[g, ST.UI_UTYPE, u]
        lane_creep = ut == D.UT_MELEE or ut == D.UT_RANGED
        own = ui[g, ST.UI_TEAM, u] == team
        return (
            1.0
            if lane_creep and own and uf[g, ST.UF_HP, u] < D.DENY_HP_FRAC * uf[g, ST.UF_MAX_HP, u]
            else 0.0
        )
    if code == 32:
        return 1.0 if uf[g, ST.UF_ATK_CD, u] <= 0.0 else 0.0
    if code == 33:
        return 0.0 if fogged else uf[g, ST.UF_STUN_T, u] / P.fps
    if code == 34:
        return 0.0 if fogged else uf[g, ST.UF_SLOW_T, u] / P.fps
    if code == 35:
        return 0.0 if fogged else uf[g, ST.UF_BUFF_T, u] / P.fps
    return 0.0


@njit(cache=True, _nrt=False, inline="always")
def unit_observer_feature(code, S, g, h, u, dx, dy, d2, fogged):
    """The unit features that depend on the observing hero h (``OBSERVER_UNIT_FEATURES``). (dx, dy) is unit u's
    offset from h where h's team sees it (its last seen position when ``fogged``), d2 = dx * dx + dy * dy."""
    uf, ui = S.uf, S.ui
    if code == 3:
        return dx * KM
    if code == 4:
        return dy * KM
    if code == 5:
        return np.sqrt(d2) * KM
    if code == 21:
        return 1.0 if ui[g, ST.UI_TARGET, u] == h and not fogged else 0.0
    if code == 22:
        return 1.0 if ui[g, ST.UI_TARGET, h] == u else 0.0
    if code == 25:
        return 1.0 if u == h else 0.0
    if code == 26:
        r = uf[g, ST.UF_RNG, h]
        return 1.0 if d2 <= r * r else 0.0
    return 0.0


@njit(cache=True, _nrt=False, inline="always")
def self_feature(code, sub, S, L, P, X, g, h):
    """Features of the controlled hero: any unit feature (code < 100) plus hero-only ones. The observer-dependent
    unit features (``OBSERVER_UNIT_FEATURES``) are filled by the kernel with ``unit_observer_feature``."""
    ui, hf, hi = S.ui, S.hf, S.hi
    fps = P.fps
    if code < 100:
        return unit_team_feature(code, S, L, P, X, g, ui[g, ST.UI_TEAM, h], h, False)
    if code == 100:
        return 1.0 if ui[g, ST.UI_ALIVE, h] else 0.0
    if code == 101:
        return hf[g, ST.HF_GOLD, h]
    if code == 102:
        return hf[g, ST.HF_XP, h]
    if code == 103:
        lv = hi[g, ST.HI_LEVEL, h]
        return C.XPT[lv + 1] - hf[g, ST.HF_XP, h] if lv < D.MAX_LEVEL else 0.0
    if code == 104:
        return hf[g, ST.HF_RESPAWN_T, h] / fps
    if code == 105:
        return (
            1.0
            if hf[g, ST.HF_BUYBACK_CD, h] <= 0.0 and hf[g, ST.HF_GOLD, h] >= C.buyback_cost(S, g, h)
            else 0.0
        )
    if code == 106:
        return C.buyback_cost(S, g, h)
    if code == 107:
        return hi[g, ST.HI_LANE_ASSIGN, h]
    if code == 108:
        return ui[g, ST.UI_TEAM, h]
    if code == 109:
        return hi[g, ST.HI_KILLS, h]
    if code == 110:
        return hi[g, ST.HI_DEATHS, h]
    if code == 111:
        return hi[g, ST.HI_LAST_HITS, h]
    if code == 112:
        return hi[g, ST.HI_DENIES, h]
    if code == 113:
        return C.net_worth(S, g, h)
    if code == 114:
        return hi[g, ST.HI_ABIL_ID + sub, h]
    if code == 115:
        return hf[g, ST.HF_ABIL_CD + sub, h] / fps
    if code == 116:
        return hi[g, ST.HI_ITEM_ID + sub, h]
    return 0.0


@njit(cache=True, _nrt=False)
def global_feature(code, sub, S, L, P, g, h):
    team = S.ui[g, ST.UI_TEAM, h]
    if code == 200:
        return S.gi[g, ST.GI_TICK] / P.fps
    if code == 201:
        wt = S.gi[g, ST.GI_WAVE_TICKS]  # the game's own wave interval (a change may shorten it)
        return (wt - S.gi[g, ST.GI_TICK] % wt) / P.fps
    if code == 202:
        return S.gi[g, ST.GI_KILLS_T + team if sub == 0 else 1 - team]
    if code == 203:
        return S.gi[g, ST.GI_TOWERS_DESTROYED + team if sub == 0 else 1 - team]
    if code == 204:
        return 1.0 if S.ui[g, ST.UI_ALIVE, L.boss] else 0.0
    if code == 205:
        return S.gf[g, ST.GF_BOSS_RESPAWN_T] / P.fps
    if code == 206:
        return (P.time_limit_ticks - S.gi[g, ST.GI_TICK]) / P.fps
    if code == 207:
        return S.gi[g, ST.GI_BARRACKS_DESTROYED + team if sub == 0 else 1 - team]
    if code >= 208 and code <= 211:
        return lineup_feature(code, sub, S, L, P, g, team)
    if code >= 212 and code <= 214:
        return lane_feature(code, sub, S, L, g, team)
    return 0.0


@njit(cache=True, _nrt=False, inline="always")
def lineup_feature(code, sub, S, L, P, g, team):
    """Team slot ``sub`` of the own (ally_*) or the enemy (enemy_*) team, heroes in agent order: its hero id + 1,
    or its seconds until respawn (0 while alive); 0 for a slot beyond the team size."""
    k = L.team_size
    if sub >= k:
        return 0.0
    side = team if code == 208 or code == 210 else 1 - team
    h = side * k + sub  # agents are ordered team 0 then team 1 (``sim/state.py``)
    if code == 208 or code == 209:
        return S.hi[g, ST.HI_HERO_ID, h] + 1
    if S.ui[g, ST.UI_ALIVE, h]:
        return 0.0
    return S.hf[g, ST.HF_RESPAWN_T, h] / P.fps


@njit(cache=True, _nrt=False, inline="always")
def lane_feature(code, sub, S, L, g, team):
    """Lane ``sub`` of the layout (0 past the map's lanes), from its towers and barracks: the own buildings' HP
    over their full HP (212), the HP fraction of the own front building, the lowest tier standing, barracks last
    (213; 0 once all fell), or how many of the enemy's still stand (214)."""
    if sub >= L.n_lanes:
        return 0.0
    side = 1 - team if code == 214 else team
    hp, full_hp_sum, standing = 0.0, 0.0, 0.0
    front_rank, front_frac = 99, 0.0
    for b in range(L.bld_end - L.bld_start):
        if L.b_lane[b] != sub or L.b_team[b] != side:
            continue
        u = L.bld_start + b
        full_hp = S.uf[g, ST.UF_MAX_HP, u]
        full_hp_sum += full_hp
        if not S.ui[g, ST.UI_ALIVE, u]:
            continue
        standing += 1.0
        hp += S.uf[g, ST.UF_HP, u]
        rank = L.b_tier[b] if L.b_utype[b] == D.UT_TOWER else 9  # towers t1 -> t3, then the barracks
        if rank < front_rank:
            front_rank, front_frac = rank, S.uf[g, ST.UF_HP, u] / full_hp
    if code == 212:
        return hp / full_hp_sum if full_hp_sum > 0 else 0.0
    if code == 213:
        return front_frac
    return standing


@njit(cache=True, _nrt=False)
def prev_feature(code, sub, S, g, h):
    if code == 300:
        return S.hi[g, ST.HI_PREV_ACTION + 0, h]
    if code == 301:
        return S.hi[g, ST.HI_PREV_ACTION + 1, h]
    if code == 302:
        return S.hi[g, ST.HI_PREV_ACTION + 2, h]
    if code == 303:
        return (S.hi[g, ST.HI_PREV_ACTION + 3, h] % 9 - 4) / 4.0
    if code == 304:
        return (S.hi[g, ST.HI_PREV_ACTION + 3, h] // 9 - 4) / 4.0
    return 0.0


@njit(cache=True, _nrt=False)
def ability_feature(code, S, L, P, g, h, k):
    a = S.hi[g, ST.HI_ABIL_ID + k, h]
    if code == 400:
        return a
    if code == 401:
        return C.ABIL[a, D.AB_KIND]
    if code == 402:
        return S.hi[g, ST.HI_ABIL_LVL + k, h]
    if code == 403:
        return S.hf[g, ST.HF_ABIL_CD + k, h] / P.fps
    if code == 404:
        ok, tt, rule, rng = C.primary_info(S, g, h, C.ACT_ABILITY, k)
        return 1.0 if ok else 0.0
    if code == 405:
        return C.ABIL[a, D.AB_MANA]
    if code == 406:
        return C.ABIL[a, D.AB_RANGE] * KM
    if code == 407:
        return C.ABIL[a, D.AB_ULT]
    return 0.0


@njit(cache=True, _nrt=False)
def item_feature(code, S, L, P, g, h, k):
    it = S.hi[g, ST.HI_ITEM_ID + k, h]
    if code == 500:
        return it
    if code == 501:
        return S.hi[g, ST.HI_ITEM_CHG + k, h]
    if code == 502:
        return S.hf[g, ST.HF_ITEM_CD + k, h] / P.fps
    if code == 503:
        if C.ITEMS[it, D.IT_ACTIVE] == D.IA_NONE:  # stat items (the change item has an active, slot 3)
            return 0.0
        ok, tt, rule, rng = C.primary_info(S, g, h, C.ACT_ITEM, k)
        return 1.0 if ok else 0.0
    if code == 504:
        return 1.0 if C.ITEMS[it, D.IT_ACTIVE] != D.IA_NONE else 0.0
    return 0.0


@njit(cache=True, _nrt=False, inline="always")
def terrain_feature(code, L, ix, iy):
    """Channel ``code`` of the static map at cell (ix, iy) (cells outside the map are fed 0 by the kernel)."""
    if code == 600:
        return float(L.walk[ix, iy])
    if code == 601:
        return float(L.lanegrid[ix, iy])
    return 0.0


@njit(cache=True, _nrt=False, inline="always")
def terrain_cell(p):
    """Index of the terrain cell holding map coordinate p; -1 outside the map."""
    if p < 0.0 or p >= D.MAP_SIZE:
        return -1
    return int(p / D.TERRAIN_CELL)
