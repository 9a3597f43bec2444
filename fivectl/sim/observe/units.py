"""Unit sets (numba): which units a team observes, their team-level feature rows, and per hero the closest ones
copied into its slots with the columns that depend on the observing hero."""

from __future__ import annotations

from numba import njit

from fivectl.sim import state as ST
from fivectl.sim.observe.features import unit_observer_feature, unit_team_feature
from fivectl.sim.observe.registry import (
    FEAT_CONST,
    G_CCOL,
    G_COBS,
    G_FCOL,
    G_FOBS,
    G_NC,
    G_NCOBS,
    G_NF,
    G_NFOBS,
    G_TOFF,
    SRC_BUILDINGS,
    SRC_CREEPS,
    SRC_HEROES,
    SRC_NEUTRALS,
)


@njit(cache=True, _nrt=False)
def unit_range(L, src):
    if src == SRC_HEROES:
        return 0, L.n_heroes
    if src == SRC_BUILDINGS:
        return L.bld_start, L.bld_end
    if src == SRC_NEUTRALS:
        return L.neu_start, L.neu_end
    return L.creep_start, L.n_units


@njit(cache=True, _nrt=False)
def team_candidates(S, L, g, team, gi, src, X):
    """The units of a source that ``team`` observes, in unit index order, and where it sees them: alive and
    visible units, plus enemy heroes in fog at their last seen position. Fog is shared by the team, so this
    runs once per team; each hero then picks its closest ones (``select_closest``)."""
    lo, hi = unit_range(L, src)
    n = 0
    for u in range(lo, hi):
        fog = False
        if S.ui[g, ST.UI_ALIVE, u] and S.vis[g, team, u]:
            x = S.uf[g, ST.UF_X, u]
            y = S.uf[g, ST.UF_Y, u]
        elif src == SRC_HEROES and S.ls[g, ST.LS_TICK, team, u] >= 0 and S.ui[g, ST.UI_TEAM, u] != team:
            fog = True
            x = S.ls[g, ST.LS_X, team, u]
            y = S.ls[g, ST.LS_Y, team, u]
        else:
            continue
        X.cand_u[team, gi, n] = u
        X.cand_fog[team, gi, n] = fog
        X.cand_x[team, gi, n] = x
        X.cand_y[team, gi, n] = y
        n += 1
    X.cand_n[team, gi] = n


@njit(cache=True, _nrt=False)
def team_unit_rows(S, L, P, T, X, g, team, gi):
    """The feature rows of every candidate unit of group gi as seen by ``team``, except the observer-dependent
    columns (left 0 here, written per hero by ``write_unit_slots``)."""
    nf, nc = T.groups[gi, G_NF], T.groups[gi, G_NC]
    fcol, ccol = T.groups[gi, G_FCOL], T.groups[gi, G_CCOL]
    for i in range(X.cand_n[team, gi]):
        u = X.cand_u[team, gi, i]
        fog = X.cand_fog[team, gi, i]
        for j in range(nf):
            code = T.fcode[fcol + j]
            if code == FEAT_CONST:
                v = T.fconst[fcol + j]
            else:
                v = unit_team_feature(code, S, L, P, X, g, team, u, fog)
            X.frows[team, gi, i, j] = v
        for j in range(nc):
            code = T.ccode[ccol + j]
            if code == FEAT_CONST:
                iv = T.cconst[ccol + j]
            else:
                iv = int(unit_team_feature(code, S, L, P, X, g, team, u, fog))
            X.crows[team, gi, i, j] = iv


@njit(cache=True, _nrt=False)
def select_closest(X, team, gi, count, hx, hy):
    """Indices (into the team's candidates of group gi) of the ``count`` closest to (hx, hy), closest first,
    ties by unit index, in ``X.sel``; returns how many were found."""
    n = 0
    best_d = X.sel_d
    out = X.sel
    for c in range(X.cand_n[team, gi]):
        x = X.cand_x[team, gi, c]
        y = X.cand_y[team, gi, c]
        d = (x - hx) * (x - hx) + (y - hy) * (y - hy)
        if n == count and d >= best_d[n - 1]:
            continue
        i = n if n < count else count - 1
        while i > 0 and best_d[i - 1] > d:
            best_d[i] = best_d[i - 1]
            out[i] = out[i - 1]
            i -= 1
        best_d[i] = d
        out[i] = c
        if n < count:
            n += 1
    return n


@njit(cache=True, _nrt=False, inline="always")
def is_unit_source(src):
    return src == SRC_HEROES or src == SRC_CREEPS or src == SRC_BUILDINGS or src == SRC_NEUTRALS


@njit(cache=True, _nrt=False)
def assign_target_slots(S, T, X, g, h, team, gi, n):
    """Hero h's target slots of group gi: its n selected units (``select_closest``), closest first."""
    toff = T.groups[gi, G_TOFF]
    if toff >= 0:
        for k in range(n):
            S.slot_unit[g, h, toff + k] = X.cand_u[team, gi, X.sel[k]]


@njit(cache=True, _nrt=False)
def write_unit_slots(S, T, B, X, g, h, team, gi, n, fbase, cbase, mbase):
    """Copy the team rows of the n selected units (``select_closest``) into hero h's slots and fill in its
    observer-dependent columns."""
    gt = T.groups
    nf, nc = gt[gi, G_NF], gt[gi, G_NC]
    fcol, ccol = gt[gi, G_FCOL], gt[gi, G_CCOL]
    assign_target_slots(S, T, X, g, h, team, gi, n)
    hx, hy = S.uf[g, ST.UF_X, h], S.uf[g, ST.UF_Y, h]
    for k in range(n):
        c = X.sel[k]
        X.sel_u[k] = X.cand_u[team, gi, c]
        X.sel_fog[k] = X.cand_fog[team, gi, c]
        X.sel_dx[k] = X.cand_x[team, gi, c] - hx
        X.sel_dy[k] = X.cand_y[team, gi, c] - hy
        B.b[mbase + k] = True
        o = fbase + k * nf
        for j in range(nf):
            B.f[o + j] = X.frows[team, gi, c, j]
        o = cbase + k * nc
        for j in range(nc):
            B.i[o + j] = X.crows[team, gi, c, j]
    # observer columns column by column: the feature code is constant in the slot loop
    for q in range(gt[gi, G_FOBS], gt[gi, G_FOBS] + gt[gi, G_NFOBS]):
        j = T.fobs[q]
        code = T.fcode[fcol + j]
        for k in range(n):
            B.f[fbase + k * nf + j] = unit_observer_feature(
                code, S, g, h, X.sel_u[k], X.sel_dx[k], X.sel_dy[k], X.sel_d[k], X.sel_fog[k]
            )
    for q in range(gt[gi, G_COBS], gt[gi, G_COBS] + gt[gi, G_NCOBS]):
        j = T.cobs[q]
        code = T.ccode[ccol + j]
        for k in range(n):
            B.i[cbase + k * nc + j] = int(
                unit_observer_feature(
                    code, S, g, h, X.sel_u[k], X.sel_dx[k], X.sel_dy[k], X.sel_d[k], X.sel_fog[k]
                )
            )
