"""Observation encoder: batched game state -> the arrays of a schema version (paper appendix E).

Design (so that a schema v2 is a TOML edit plus a few lines here):

- Every group name maps to a *source* (``GROUP_SOURCES``): which units or slots it reads (heroes, lane creeps,
  buildings, neutrals, own abilities, own items, terrain around the hero, global/self/previous-action vectors).
- Every field name maps, per source, to a *feature code* in a registry (``UNIT_FEATURES``, ``SELF_FEATURES``,
  ...). A field of shape ``[k]`` uses k columns ``(code, 0..k-1)``. Retired fields are fed their constant.
- The schema is compiled into small integer tables (group table, per-column codes); one numba kernel walks them
  for every game and agent and calls the feature function of each column — no Python loop over units or agents.
  Adding a field = add ``name -> code`` to a registry and a branch computing it in the matching ``*_feature``
  function below; adding a group = add its source.
- Kernel functions take a handful of namedtuples, never loose arrays: the game state ``S``, layout ``L`` and
  parameters ``P`` (``fivectl.sim.state``), the compiled tables ``T`` (``EncoderTables``), the output buffers
  ``B`` (``ObsBuffers``) and the scratch ``X`` (``EncoderScratch``). A feature that reads another state array,
  or a new table, therefore changes no signature. The feature functions are inlined, so reading the tuples
  there costs nothing.
- Unit sets are encoded in two passes because fog of war is shared by a team: per game and team, the observed
  units of each set and their rows of team-level features (``unit_team_feature``) are computed once; per hero,
  the closest ones are selected, their rows copied, and only the columns that depend on the observing hero
  (``OBSERVER_UNIT_FEATURES``: offsets, distance, targeting, range; ``unit_observer_feature``) are computed. A
  new unit feature that depends on the observing hero (not only on its team) goes in that list and function.

Unit sets keep the closest observed units (ties by unit index), with masks. Units in fog are not observed, except
enemy heroes, which keep their last seen state (``seen_age`` > 0 tells how old it is). For targetable unit sets the
encoder records which unit each target slot holds (``State.slot_unit``) so the game can resolve the unit-target
action; ``action_mask``, ``target_mask`` and ``param_mask`` come from the same rules the game uses to execute.

Arrays are written into three flat buffers (float32, int32, bool) with each key's block contiguous, so every
``obs[key]`` is a C-contiguous ``[G, A, *shape]`` view without copies.
"""

from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
from numba import njit

from fivectl.errors import BadInput
from fivectl.schema.spec import ObsSchema
from fivectl.sim import core as C
from fivectl.sim import data as D
from fivectl.sim import state as ST

# ---- sources ----
SRC_GLOBAL, SRC_SELF, SRC_PREV, SRC_HEROES, SRC_CREEPS, SRC_BUILDINGS, SRC_NEUTRALS = 0, 1, 2, 3, 4, 5, 6
SRC_ABILITIES, SRC_ITEMS, SRC_TERRAIN = 7, 8, 9
GROUP_SOURCES = {
    "global": SRC_GLOBAL,
    "self": SRC_SELF,
    "prev_action": SRC_PREV,
    "heroes": SRC_HEROES,
    "creeps": SRC_CREEPS,
    "buildings": SRC_BUILDINGS,
    "neutrals": SRC_NEUTRALS,
    "abilities": SRC_ABILITIES,
    "items": SRC_ITEMS,
    "terrain": SRC_TERRAIN,
}
UNIT_SOURCES = (SRC_HEROES, SRC_CREEPS, SRC_BUILDINGS, SRC_NEUTRALS)
SLOT_SOURCES = (SRC_ABILITIES, SRC_ITEMS)
FEAT_CONST = 9999  # retired field: fed its constant

# ---- feature registries: name -> (code, width, kind) where kind is "float" (float/bool) or "categorical" ----
# Unit features (unit sets; also usable in "self", where the unit is the controlled hero).
UNIT_FEATURES = {
    "unit_type": (0, 1, "categorical"),
    "hero_id": (1, 1, "categorical"),
    "enemy": (2, 1, "float"),
    "dx": (3, 1, "float"),
    "dy": (4, 1, "float"),
    "distance": (5, 1, "float"),
    "hp": (6, 1, "float"),
    "max_hp": (7, 1, "float"),
    "hp_frac": (8, 1, "float"),
    "mana": (9, 1, "float"),
    "mana_frac": (10, 1, "float"),
    "level": (11, 1, "float"),
    "attack_damage": (12, 1, "float"),
    "armor": (13, 1, "float"),
    "attack_range": (14, 1, "float"),
    "move_speed": (15, 1, "float"),
    "stunned": (16, 1, "float"),
    "slowed": (17, 1, "float"),
    "buffed": (18, 1, "float"),
    "visible": (19, 1, "float"),
    "seen_age": (20, 1, "float"),
    "targets_me": (21, 1, "float"),
    "my_target": (22, 1, "float"),
    "tier": (23, 1, "categorical"),
    "lane": (24, 1, "categorical"),
    "is_self": (25, 1, "float"),
    "in_attack_range": (26, 1, "float"),
    "vulnerable": (27, 1, "float"),
    "x": (28, 1, "float"),
    "y": (29, 1, "float"),
    "extra_life": (30, 1, "float"),
    "deniable": (31, 1, "float"),
    "attack_ready": (32, 1, "float"),
    # v3: seconds left of an effect (v2 has the booleans stunned/slowed/buffed); 0 for a hero in fog
    "stun_s": (33, 1, "float"),
    "slow_s": (34, 1, "float"),
    "buff_s": (35, 1, "float"),
}
# Unit features that depend on the observing hero, not only on its team (computed per agent by
# ``unit_observer_feature``; every other unit feature is computed once per team by ``unit_team_feature``).
OBSERVER_UNIT_FEATURES = ("dx", "dy", "distance", "targets_me", "my_target", "is_self", "in_attack_range")
OBSERVER_CODES = frozenset(UNIT_FEATURES[name][0] for name in OBSERVER_UNIT_FEATURES)
SELF_FEATURES = {
    "alive": (100, 1, "float"),
    "gold": (101, 1, "float"),
    "xp": (102, 1, "float"),
    "xp_to_next": (103, 1, "float"),
    "respawn_s": (104, 1, "float"),
    "buyback_ready": (105, 1, "float"),
    "buyback_cost": (106, 1, "float"),
    "lane_assign": (107, 1, "categorical"),
    "team": (108, 1, "categorical"),
    "kills": (109, 1, "float"),
    "deaths": (110, 1, "float"),
    "last_hits": (111, 1, "float"),
    "denies": (112, 1, "float"),
    "net_worth": (113, 1, "float"),
    "ability_ids": (114, 4, "categorical"),
    "ability_cooldowns": (115, 4, "float"),
    "item_ids": (116, D.N_ITEM_SLOTS, "categorical"),
}
GLOBAL_FEATURES = {
    "game_time": (200, 1, "float"),
    "next_wave": (201, 1, "float"),
    "team_kills": (202, 2, "float"),
    "towers_destroyed": (203, 2, "float"),
    "boss_alive": (204, 1, "float"),
    "boss_respawn": (205, 1, "float"),
    "time_left": (206, 1, "float"),
    "barracks_destroyed": (207, 2, "float"),
    # v3: the lineups (hero id + 1 per team slot in agent order, 0 = no hero: teams smaller than 5) and every
    # hero's respawn timer in the same order; both public in a real game (draft screen, top bar), so no fog.
    "ally_lineup": (208, D.MAX_TEAM_SIZE, "categorical"),
    "enemy_lineup": (209, D.MAX_TEAM_SIZE, "categorical"),
    "ally_respawn": (210, D.MAX_TEAM_SIZE, "float"),
    "enemy_respawn": (211, D.MAX_TEAM_SIZE, "float"),
}
PREV_FEATURES = {
    "primary": (300, 1, "categorical"),
    "delay": (301, 1, "categorical"),
    "target_slot": (302, 1, "categorical"),
    "offset_x": (303, 1, "float"),
    "offset_y": (304, 1, "float"),
}
ABILITY_FEATURES = {
    "ability_id": (400, 1, "categorical"),
    "kind": (401, 1, "categorical"),
    "level": (402, 1, "float"),
    "cooldown": (403, 1, "float"),
    "castable": (404, 1, "float"),
    "mana_cost": (405, 1, "float"),
    "cast_range": (406, 1, "float"),
    "ultimate": (407, 1, "float"),
}
ITEM_FEATURES = {
    "item_id": (500, 1, "categorical"),
    "charges": (501, 1, "float"),
    "cooldown": (502, 1, "float"),
    "castable": (503, 1, "float"),
    "active": (504, 1, "float"),
}
TERRAIN_FEATURES = {
    "walkable": (600, 1, "float"),
    "lane": (601, 1, "float"),
}
SOURCE_FEATURES = {
    SRC_GLOBAL: GLOBAL_FEATURES,
    SRC_SELF: {**UNIT_FEATURES, **SELF_FEATURES},
    SRC_PREV: PREV_FEATURES,
    SRC_HEROES: UNIT_FEATURES,
    SRC_CREEPS: UNIT_FEATURES,
    SRC_BUILDINGS: UNIT_FEATURES,
    SRC_NEUTRALS: UNIT_FEATURES,
    SRC_ABILITIES: ABILITY_FEATURES,
    SRC_ITEMS: ITEM_FEATURES,
    SRC_TERRAIN: TERRAIN_FEATURES,
}
KM = 1.0 / 1000.0  # distances are fed in thousands of game units

# group table columns (G_FOBS/G_COBS: first entry of the group's observer-dependent columns in ``fobs``/``cobs``)
(G_SRC, G_COUNT, G_NF, G_NC, G_FOFF, G_COFF, G_MOFF, G_TOFF, G_FCOL, G_CCOL, G_SH, G_SW) = range(12)
G_FOBS, G_NFOBS, G_COBS, G_NCOBS = 12, 13, 14, 15
N_GCOLS = 16


# What the kernel reads besides the game state: the compiled schema and the game's action table. One namedtuple
# argument, so that a new table (a schema v3 group source, say) is one more member here and in ``compile_schema``
# rather than one more parameter of every kernel function; member access costs nothing in compiled code.
EncoderTables = namedtuple(
    "EncoderTables",
    (
        "groups",  # int64 [n_groups, N_GCOLS]: the group table (columns G_*)
        "fcode",  # int32 [n float columns over all groups]: feature code of each column (FEAT_CONST: retired)
        "fsub",  # int32: element of the feature (fields of width k have columns 0..k-1)
        "fconst",  # float32: the constant fed to a retired column
        "ccode",  # int32 [n categorical columns]: same for categorical columns
        "csub",
        "cconst",  # int32
        "fobs",  # int32: group-relative float columns computed per observer (unit groups and self)
        "cobs",  # int32: same for categorical columns
        "act_kind",  # int64 [n_primary]: the game's action kind and slot of each primary action
        "act_slot",
        "n_targets",  # target slots per hero
        "amask_off",  # per-agent offsets of action_mask / target_mask / param_mask in the bool buffer
        "tmask_off",
        "pmask_off",
    ),
)
# The three flat output buffers (float32, int32, bool); every key's block is contiguous in one of them.
ObsBuffers = namedtuple("ObsBuffers", ("f", "i", "b"))


@dataclass
class CompiledSchema:
    """The kernel's tables for a schema, plus the key -> buffer-block map."""

    tables: EncoderTables
    blocks: dict  # key -> (buffer name, offset per agent, per-agent shape)
    n_float: int  # per-agent sizes of the three buffers
    n_int: int
    n_bool: int


def compile_schema(schema: ObsSchema, act_kind: np.ndarray, act_slot: np.ndarray) -> CompiledSchema:
    """Check every group/field against the registries and build the kernel tables (BadInput if unknown).
    ``act_kind``/``act_slot``: the game's kind and slot of each of the schema's primary actions."""
    if len(act_kind) != schema.action.n_primary or len(act_slot) != schema.action.n_primary:
        raise BadInput(
            f"schema v{schema.version}: the action table has {len(act_kind)} kinds and {len(act_slot)} slots "
            f"for {schema.action.n_primary} primary actions"
        )
    rows, fcode, fsub, fconst, ccode, csub, cconst = [], [], [], [], [], [], []
    fobs, cobs = [], []
    blocks = {}
    nf = ni = nb = 0
    t_offsets = schema.target_offsets()
    for g in schema.groups:
        if g.name not in GROUP_SOURCES:
            raise BadInput(
                f"schema v{schema.version}: group {g.name!r} has no encoder source "
                f"(known: {', '.join(GROUP_SOURCES)})"
            )
        src = GROUP_SOURCES[g.name]
        registry = SOURCE_FEATURES[src]
        expect_kind = {
            SRC_GLOBAL: "vector",
            SRC_SELF: "vector",
            SRC_PREV: "vector",
            SRC_TERRAIN: "grid",
        }.get(src, "unitset")
        if g.kind != expect_kind:
            raise BadInput(
                f"schema v{schema.version}: group {g.name!r} must be a {expect_kind}, not {g.kind}"
            )
        if g.kind == "unitset" and not 1 <= g.count <= ST.SCRATCH_MAX_COUNT:
            raise BadInput(
                f"schema v{schema.version}: group {g.name!r} count must be 1..{ST.SCRATCH_MAX_COUNT}"
            )
        if g.targetable and src not in UNIT_SOURCES:
            raise BadInput(f"schema v{schema.version}: group {g.name!r} cannot be targetable")
        fcol0, ccol0 = len(fcode), len(ccode)
        fobs0, cobs0 = len(fobs), len(cobs)
        for f in g.fields:
            if f.retired:
                for j in range(f.width):
                    if f.is_float:
                        fcode.append(FEAT_CONST)
                        fsub.append(j)
                        fconst.append(f.constant)
                    else:
                        ccode.append(FEAT_CONST)
                        csub.append(j)
                        cconst.append(int(f.constant))
                continue
            if f.name not in registry:
                raise BadInput(
                    f"schema v{schema.version}: field {g.name}.{f.name} has no encoder feature "
                    f"(known for {g.name}: {', '.join(registry)})"
                )
            code, width, kind = registry[f.name]
            if f.width != width:
                raise BadInput(
                    f"schema v{schema.version}: field {g.name}.{f.name} has width {f.width}, "
                    f"the encoder computes {width}"
                )
            if (kind == "categorical") != (f.kind == "categorical"):
                raise BadInput(f"schema v{schema.version}: field {g.name}.{f.name} must be {kind}")
            if src in (SRC_SELF, *UNIT_SOURCES) and code in OBSERVER_CODES:
                if f.is_float:
                    fobs.extend(len(fcode) - fcol0 + j for j in range(width))
                else:
                    cobs.extend(len(ccode) - ccol0 + j for j in range(width))
            for j in range(width):
                if f.is_float:
                    fcode.append(code)
                    fsub.append(j)
                    fconst.append(0.0)
                else:
                    ccode.append(code)
                    csub.append(j)
                    cconst.append(0)
        lead = g.item_shape()
        n_items = int(np.prod(lead)) if lead else 1
        foff, coff, moff = nf, ni, nb
        blocks[f"{g.name}.float"] = ("float", nf, (*lead, g.n_float))
        nf += n_items * g.n_float
        if g.n_cat:
            blocks[f"{g.name}.cat"] = ("int", ni, (*lead, g.n_cat))
            ni += n_items * g.n_cat
        if g.kind == "unitset":
            blocks[f"{g.name}.mask"] = ("bool", nb, (g.count,))
            nb += g.count
        sh, sw = g.size if g.kind == "grid" else (0, 0)
        rows.append(
            [
                src,
                g.count if g.kind == "unitset" else 1,
                g.n_float,
                g.n_cat,
                foff,
                coff,
                moff,
                t_offsets.get(g.name, -1),
                fcol0,
                ccol0,
                sh,
                sw,
                fobs0,
                len(fobs) - fobs0,
                cobs0,
                len(cobs) - cobs0,
            ]
        )
    P, T = schema.action.n_primary, schema.n_targets
    amask_off = nb
    blocks["action_mask"] = ("bool", nb, (P,))
    nb += P
    tmask_off = nb
    blocks["target_mask"] = ("bool", nb, (P, T))
    nb += P * T
    pmask_off = nb
    blocks["param_mask"] = ("bool", nb, (P, 2))
    nb += P * 2
    tables = EncoderTables(
        groups=np.array(rows, dtype=np.int64).reshape(-1, N_GCOLS),
        fcode=np.array(fcode, np.int32),
        fsub=np.array(fsub, np.int32),
        fconst=np.array(fconst, np.float32),
        ccode=np.array(ccode, np.int32),
        csub=np.array(csub, np.int32),
        cconst=np.array(cconst, np.int32),
        fobs=np.array(fobs, np.int32),
        cobs=np.array(cobs, np.int32),
        act_kind=np.ascontiguousarray(act_kind, dtype=np.int64),
        act_slot=np.ascontiguousarray(act_slot, dtype=np.int64),
        n_targets=int(T),
        amask_off=amask_off,
        tmask_off=tmask_off,
        pmask_off=pmask_off,
    )
    return CompiledSchema(tables=tables, blocks=blocks, n_float=nf, n_int=ni, n_bool=nb)


# ---------------------------------------------------------------- feature functions (numba)
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


# ---------------------------------------------------------------- unit selection
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


EncoderScratch = namedtuple(
    "EncoderScratch",
    (
        "vuln",  # bool [U]: C.vulnerable of every unit of the current game
        "cand_u",  # int64 [2, n_groups, U]: per team and unit group, the observed units ...
        "cand_fog",  # bool: ... whether shown at their last seen state ...
        "cand_x",  # float64: ... and where
        "cand_y",
        "cand_n",  # int64 [2, n_groups]: how many
        "frows",  # float32 [2, n_groups, U, max float columns]: their team-level feature rows
        "crows",  # int32 [2, n_groups, U, max categorical columns]
        "sel",  # int64 [SCRATCH_MAX_COUNT]: one hero's closest candidates
        "sel_d",  # float64 [SCRATCH_MAX_COUNT]: their squared distance, unit, fog flag and offset from the hero
        "sel_u",
        "sel_fog",
        "sel_dx",
        "sel_dy",
        "cell_x",  # int64 [grid width]: terrain cell index of each grid column (-1 outside the map)
        "cell_y",  # int64 [grid height]: same for each grid row
        "t_slot",  # int64 [n_targets]: target slots a hero may target, and per slot what the rules check
        "t_attack",
        "t_spell",
        "t_ally",
        "t_d2",
    ),
)


def alloc_scratch(tables: EncoderTables, n_units: int) -> EncoderScratch:
    groups = tables.groups
    ng = max(len(groups), 1)
    max_nf = max([1, *groups[:, G_NF]])
    max_nc = max([1, *groups[:, G_NC]])
    max_sw = max([1, *groups[:, G_SW]])
    max_sh = max([1, *groups[:, G_SH]])
    nt = max(tables.n_targets, 1)
    return EncoderScratch(
        vuln=np.zeros(n_units, np.bool_),
        cand_u=np.zeros((2, ng, n_units), np.int64),
        cand_fog=np.zeros((2, ng, n_units), np.bool_),
        cand_x=np.zeros((2, ng, n_units), np.float64),
        cand_y=np.zeros((2, ng, n_units), np.float64),
        cand_n=np.zeros((2, ng), np.int64),
        frows=np.zeros((2, ng, n_units, max_nf), np.float32),
        crows=np.zeros((2, ng, n_units, max_nc), np.int32),
        sel=np.zeros(ST.SCRATCH_MAX_COUNT, np.int64),
        sel_d=np.zeros(ST.SCRATCH_MAX_COUNT, np.float64),
        sel_u=np.zeros(ST.SCRATCH_MAX_COUNT, np.int64),
        sel_fog=np.zeros(ST.SCRATCH_MAX_COUNT, np.bool_),
        sel_dx=np.zeros(ST.SCRATCH_MAX_COUNT, np.float64),
        sel_dy=np.zeros(ST.SCRATCH_MAX_COUNT, np.float64),
        cell_x=np.zeros(max_sw, np.int64),
        cell_y=np.zeros(max_sh, np.int64),
        t_slot=np.zeros(nt, np.int64),
        t_attack=np.zeros(nt, np.bool_),
        t_spell=np.zeros(nt, np.bool_),
        t_ally=np.zeros(nt, np.bool_),
        t_d2=np.zeros(nt, np.float64),
    )


MASK_KEYS = ("action_mask", "target_mask", "param_mask")
"""What ``Encoder.encode(..., masks_only=True)`` returns."""


class Encoder:
    """Encodes a batched game state for one schema version (arrays per ``schema.array_specs()``)."""

    def __init__(self, schema: ObsSchema, act_kind: np.ndarray, act_slot: np.ndarray):
        self.schema = schema
        self.compiled = compile_schema(schema, act_kind, act_slot)
        specs = schema.array_specs()
        missing = set(specs) ^ set(self.compiled.blocks)
        if missing:  # the compiled layout must be exactly the schema's array list
            raise BadInput(f"schema v{schema.version}: encoder layout disagrees on {sorted(missing)}")
        self._scratch: EncoderScratch | None = None
        self.n_targets = schema.n_targets
        self._blocks = [
            (key, buf, off, math.prod(shape), shape)
            for key, (buf, off, shape) in self.compiled.blocks.items()
        ]

    def _scratch_for(self, n_units: int) -> EncoderScratch:
        if self._scratch is None or self._scratch.vuln.shape[0] != n_units:
            self._scratch = alloc_scratch(self.compiled.tables, n_units)
        return self._scratch

    def encode(self, S, L, P, masks_only: bool = False) -> dict[str, np.ndarray]:
        """Every array of the schema, ``[G, A, ...]``; with ``masks_only`` the action masks alone
        (``MASK_KEYS``): a third of the work, for a step whose observation only scripted bots and the game's
        validation of the next actions read (a held step of ``model.decide_every``)."""
        c = self.compiled
        if S.slot_unit.shape[2] < self.n_targets or S.slot_unit.shape[1] != L.n_heroes:
            raise BadInput(
                f"encoder for schema v{self.schema.version}: the state was built for another schema"
            )
        G = S.rng.shape[0]
        A = L.n_heroes
        bufs = ObsBuffers(
            f=np.zeros(G * A * c.n_float, np.float32),
            i=np.zeros(max(G * A * c.n_int, 1), np.int32),
            b=np.zeros(G * A * c.n_bool, np.bool_),
        )
        encode_all(S, L, P, c.tables, bufs, self._scratch_for(L.n_units), masks_only)
        by_name = {"float": bufs.f, "int": bufs.i, "bool": bufs.b}
        GA = G * A
        return {
            key: by_name[buf][off * GA : (off + n) * GA].reshape(G, A, *shape)
            for key, buf, off, n, shape in self._blocks
            if not masks_only or key in MASK_KEYS
        }


__all__ = ["Encoder", "GROUP_SOURCES", "SOURCE_FEATURES", "compile_schema", "encode_all"]
