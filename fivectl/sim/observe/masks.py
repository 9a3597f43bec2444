"""The action masks (numba): ``action_mask``, ``target_mask`` and ``param_mask`` from the rules the game executes
(``core.primary_info`` / ``core.target_ok``), over the target slots the unit sets assigned."""

from __future__ import annotations

from numba import njit

from fivectl.sim import core as C
from fivectl.sim import data as D
from fivectl.sim import state as ST


@njit(cache=True, _nrt=False)
def slot_targets(S, L, g, h, n_tgt, X):
    """The filled target slots of hero h that it may target at all (alive, visible), with what the target rules
    check (as core.target_ok): attackable, enemy-spell target, ally hero, squared distance. Returns how many."""
    uf, ui = S.uf, S.ui
    team = ui[g, ST.UI_TEAM, h]
    n = 0
    for k in range(n_tgt):
        u = S.slot_unit[g, h, k]
        if u < 0 or ui[g, ST.UI_ALIVE, u] == 0 or not S.vis[g, team, u]:
            continue
        tu = ui[g, ST.UI_TEAM, u]
        ut = ui[g, ST.UI_UTYPE, u]
        if u == h:
            attackable = False
        elif tu != team:
            attackable = X.vuln[u]
        else:  # deny
            lane_creep = ut == D.UT_MELEE or ut == D.UT_RANGED
            attackable = lane_creep and uf[g, ST.UF_HP, u] < D.DENY_HP_FRAC * uf[g, ST.UF_MAX_HP, u]
        dx = uf[g, ST.UF_X, u] - uf[g, ST.UF_X, h]
        dy = uf[g, ST.UF_Y, u] - uf[g, ST.UF_Y, h]
        X.t_slot[n] = k
        X.t_attack[n] = attackable
        X.t_spell[n] = tu != team and not (ut == D.UT_TOWER or ut == D.UT_BARRACKS or ut == D.UT_ANCIENT)
        X.t_ally[n] = tu == team and u < L.n_heroes
        X.t_d2[n] = dx * dx + dy * dy
        n += 1
    return n


@njit(cache=True, _nrt=False)
def encode_masks(S, L, T, B, X, g, h, ga, GA):
    """action_mask / target_mask / param_mask with the rules the game executes (core.primary_info/target_ok)."""
    n_prim, n_tgt = T.act_kind.shape[0], T.n_targets
    bbuf = B.b
    abase = T.amask_off * GA + ga * n_prim
    tbase = T.tmask_off * GA + ga * n_prim * n_tgt
    pbase = T.pmask_off * GA + ga * n_prim * 2
    n_cand = slot_targets(S, L, g, h, n_tgt, X)
    for p in range(n_prim):
        ok, tt, rule, rng = C.primary_info(S, g, h, T.act_kind[p], T.act_slot[p])
        uses_unit = tt == C.TT_UNIT or tt == C.TT_UNIT_OFFSET
        bbuf[pbase + 2 * p] = uses_unit
        bbuf[pbase + 2 * p + 1] = tt == C.TT_POINT or tt == C.TT_UNIT_OFFSET
        if ok and uses_unit:
            anyt = False
            r2 = rng * rng
            row = tbase + p * n_tgt
            for i in range(n_cand):
                if rule == C.R_ATTACK:
                    t_ok = X.t_attack[i]
                elif rule == C.R_ENEMY_SPELL:
                    t_ok = X.t_spell[i] and X.t_d2[i] <= r2
                elif rule == C.R_ALLY_HERO:
                    t_ok = X.t_ally[i] and X.t_d2[i] <= r2
                else:
                    t_ok = False
                if t_ok:
                    bbuf[row + X.t_slot[i]] = True
                    anyt = True
            ok = anyt
        bbuf[abase + p] = ok
