"""The kernel (numba): ``encode_all`` walks the group table for every game and agent and writes each group
(vector, terrain grid, ability/item slots, unit set) and the action masks into the flat buffers."""

from __future__ import annotations

from numba import njit

from fivectl.sim import core as C
from fivectl.sim import data as D
from fivectl.sim import state as ST
from fivectl.sim.observe.features import (
    ability_feature,
    global_feature,
    item_feature,
    prev_feature,
    self_feature,
    terrain_cell,
    terrain_feature,
    unit_observer_feature,
)
from fivectl.sim.observe.masks import encode_masks
from fivectl.sim.observe.registry import (
    FEAT_CONST,
    G_CCOL,
    G_COBS,
    G_COFF,
    G_COUNT,
    G_FCOL,
    G_FOBS,
    G_FOFF,
    G_MOFF,
    G_NC,
    G_NCOBS,
    G_NF,
    G_NFOBS,
    G_SH,
    G_SRC,
    G_SW,
    SRC_ABILITIES,
    SRC_GLOBAL,
    SRC_ITEMS,
    SRC_PREV,
    SRC_SELF,
    SRC_TERRAIN,
)
from fivectl.sim.observe.units import (
    assign_target_slots,
    is_unit_source,
    select_closest,
    team_candidates,
    team_unit_rows,
    write_unit_slots,
)


@njit(cache=True, _nrt=False, inline="always")
def vector_feature(src, code, sub, S, L, P, X, g, h):
    """Feature ``code`` of a vector group's source (global, self or previous action) for hero h."""
    if src == SRC_GLOBAL:
        return global_feature(code, sub, S, L, P, g, h)
    if src == SRC_SELF:
        return self_feature(code, sub, S, L, P, X, g, h)
    return prev_feature(code, sub, S, g, h)


@njit(cache=True, _nrt=False, inline="always")
def write_vector_group(S, L, P, T, B, X, g, h, gi, fbase, cbase):
    """One vector group (global, self, previous action) of hero h."""
    src = T.groups[gi, G_SRC]
    fcol, ccol = T.groups[gi, G_FCOL], T.groups[gi, G_CCOL]
    for j in range(T.groups[gi, G_NF]):
        code = T.fcode[fcol + j]
        if code == FEAT_CONST:
            B.f[fbase + j] = T.fconst[fcol + j]
        else:
            B.f[fbase + j] = vector_feature(src, code, T.fsub[fcol + j], S, L, P, X, g, h)
    for j in range(T.groups[gi, G_NC]):
        code = T.ccode[ccol + j]
        if code == FEAT_CONST:
            B.i[cbase + j] = T.cconst[ccol + j]
        else:
            B.i[cbase + j] = int(vector_feature(src, code, T.csub[ccol + j], S, L, P, X, g, h))
    if src == SRC_SELF:  # the hero seen from itself (dx = dy = distance = 0, is_self = 1, ...)
        for q in range(T.groups[gi, G_FOBS], T.groups[gi, G_FOBS] + T.groups[gi, G_NFOBS]):
            j = T.fobs[q]
            B.f[fbase + j] = unit_observer_feature(T.fcode[fcol + j], S, g, h, h, 0.0, 0.0, 0.0, False)
        for q in range(T.groups[gi, G_COBS], T.groups[gi, G_COBS] + T.groups[gi, G_NCOBS]):
            j = T.cobs[q]
            B.i[cbase + j] = int(unit_observer_feature(T.ccode[ccol + j], S, g, h, h, 0.0, 0.0, 0.0, False))


@njit(cache=True, _nrt=False, inline="always")
def write_terrain_group(S, L, T, B, X, g, h, gi, fbase):
    """The terrain grid centred on hero h, channel by channel (the feature code is constant in the cell loops)."""
    sh, sw, nf = T.groups[gi, G_SH], T.groups[gi, G_SW], T.groups[gi, G_NF]
    fcol = T.groups[gi, G_FCOL]
    hx, hy = S.uf[g, ST.UF_X, h], S.uf[g, ST.UF_Y, h]
    for c in range(sw):
        X.cell_x[c] = terrain_cell(hx + (c - (sw - 1) * 0.5) * D.TERRAIN_CELL)
    for r in range(sh):
        X.cell_y[r] = terrain_cell(hy + (r - (sh - 1) * 0.5) * D.TERRAIN_CELL)
    for j in range(nf):
        code = T.fcode[fcol + j]
        for r in range(sh):
            iy = X.cell_y[r]
            for c in range(sw):
                ix = X.cell_x[c]
                o = fbase + (r * sw + c) * nf + j
                if code == FEAT_CONST:
                    B.f[o] = T.fconst[fcol + j]
                elif ix >= 0 and iy >= 0:
                    B.f[o] = terrain_feature(code, L, ix, iy)


@njit(cache=True, _nrt=False, inline="always")
def slot_feature(src, code, S, L, P, g, h, k):
    """Feature ``code`` of hero h's ability or item slot k."""
    if src == SRC_ABILITIES:
        return ability_feature(code, S, L, P, g, h, k)
    return item_feature(code, S, L, P, g, h, k)


@njit(cache=True, _nrt=False, inline="always")
def write_slot_group(S, L, P, T, B, g, h, gi, fbase, cbase, mbase):
    """Hero h's filled ability or item slots, with their mask."""
    src, count = T.groups[gi, G_SRC], T.groups[gi, G_COUNT]
    nf, nc = T.groups[gi, G_NF], T.groups[gi, G_NC]
    fcol, ccol = T.groups[gi, G_FCOL], T.groups[gi, G_CCOL]
    for k in range(count):
        if src == SRC_ABILITIES:
            present = k < 4 and S.hi[g, ST.HI_ABIL_ID + k, h] > 0
        else:
            present = k < D.N_ITEM_SLOTS and S.hi[g, ST.HI_ITEM_ID + k, h] > 0
        if not present:
            continue
        B.b[mbase + k] = True
        for j in range(nf):
            code = T.fcode[fcol + j]
            if code == FEAT_CONST:
                B.f[fbase + k * nf + j] = T.fconst[fcol + j]
            else:
                B.f[fbase + k * nf + j] = slot_feature(src, code, S, L, P, g, h, k)
        for j in range(nc):
            code = T.ccode[ccol + j]
            if code == FEAT_CONST:
                B.i[cbase + k * nc + j] = T.cconst[ccol + j]
            else:
                B.i[cbase + k * nc + j] = int(slot_feature(src, code, S, L, P, g, h, k))


# ---------------------------------------------------------------- the kernel
@njit(cache=True, _nrt=False)
def encode_all(S, L, P, T, B, X, masks_only):
    """Fill the zeroed flat buffers ``B`` (``ObsBuffers``) for every game and agent. Per-agent layout is given by
    the group table ``T.groups`` (``T``: ``EncoderTables``); a key's block holds [G, A, *shape] contiguously at
    ``block_offset * G * A``. Empty slots and cells outside the map are not written (they stay 0). ``X`` is the
    scratch (``EncoderScratch``). ``masks_only``: the target slots (``S.slot_unit``) and the action, target and
    parameter masks alone, the same as a full encoding gives, for a step no policy reads (``Encoder.encode``)."""
    G = S.rng.shape[0]
    A = L.n_heroes
    GA = G * A
    gt = T.groups
    n_groups = gt.shape[0]
    for g in range(G):
        for u in range(L.n_units):
            X.vuln[u] = C.vulnerable(S, L, g, u)
        # what each team observes is shared by its heroes: candidates and their team-level rows once per team
        for team in range(2):
            for gi in range(n_groups):
                src = gt[gi, G_SRC]
                if is_unit_source(src):
                    team_candidates(S, L, g, team, gi, src, X)
                    if not masks_only:
                        team_unit_rows(S, L, P, T, X, g, team, gi)
        for h in range(A):
            ga = g * A + h
            for k in range(T.n_targets):
                S.slot_unit[g, h, k] = -1
            for gi in range(n_groups):
                src = gt[gi, G_SRC]
                count = gt[gi, G_COUNT]
                fbase = gt[gi, G_FOFF] * GA + ga * count * gt[gi, G_NF]
                cbase = gt[gi, G_COFF] * GA + ga * count * gt[gi, G_NC]
                mbase = gt[gi, G_MOFF] * GA + ga * count
                if masks_only:
                    if is_unit_source(src):
                        team = S.ui[g, ST.UI_TEAM, h]
                        n = select_closest(X, team, gi, count, S.uf[g, ST.UF_X, h], S.uf[g, ST.UF_Y, h])
                        assign_target_slots(S, T, X, g, h, team, gi, n)
                    continue
                if src == SRC_GLOBAL or src == SRC_SELF or src == SRC_PREV:
                    write_vector_group(S, L, P, T, B, X, g, h, gi, fbase, cbase)
                elif src == SRC_TERRAIN:
                    fbase = gt[gi, G_FOFF] * GA + ga * gt[gi, G_SH] * gt[gi, G_SW] * gt[gi, G_NF]
                    write_terrain_group(S, L, T, B, X, g, h, gi, fbase)
                elif src == SRC_ABILITIES or src == SRC_ITEMS:
                    write_slot_group(S, L, P, T, B, g, h, gi, fbase, cbase, mbase)
                else:
                    team = S.ui[g, ST.UI_TEAM, h]
                    n = select_closest(X, team, gi, count, S.uf[g, ST.UF_X, h], S.uf[g, ST.UF_Y, h])
                    write_unit_slots(S, T, B, X, g, h, team, gi, n, fbase, cbase, mbase)
            encode_masks(S, L, T, B, X, g, h, ga, GA)
