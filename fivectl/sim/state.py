"""State arrays of the batched MOBA and the static map layout.

All state lives in a few field-major numpy arrays with a leading game axis ``G`` (``MobaEnv.core_state``, a
:class:`State`: ``uf[G, UF_*, U]`` unit floats, ``ui`` unit ints, ``hf/hi[G, HF_*/HI_*, H]`` hero floats/ints,
``gf/gi`` per game, ``ls`` last seen, ...), so numba kernels, the observation encoder and the scripted bots
(``fivectl.sim.bots``) read the same memory. ``MobaEnv.state`` gives the same memory as *named views* (no
copies; see :func:`state_views`), which is what bots should use: ``env.state.x[g, u]``,
``env.state.abil_cd[g, h, k]``. ``MobaEnv.layout`` is a :class:`Layout`. Read-only for anything but ``core.py``
(tests and scenarios may edit it, then call ``MobaEnv.observe()``).

Unit table (``[G, U]``, one row per unit slot; a slot's meaning is fixed by the layout):

- slots ``0 .. H-1``: heroes, ``H = 2 * team_size``; hero ``h`` is agent ``h`` (team 0 first, then team 1);
- ``L.bld_start .. L.bld_end``: buildings (per team: ancient, two tier-4 towers, then per lane t1, t2, t3,
  barracks);
- ``L.neu_start .. L.neu_end``: neutral creeps (two per camp), the boss is the last of them (``L.boss``);
- ``L.creep_start .. U``: lane creeps, ``CREEP_SLOTS_PER_LANE`` slots per lane, reused after death.

Unit columns: ``alive`` int 0/1; ``team`` int (0, 1, 2 = neutral); ``utype`` int (``data.UT_*``); ``x, y``
position; ``hp, max_hp, mana, max_mana``; ``dmg`` attack damage; ``armor``; ``rng_`` attack range; ``bat``
attack interval in s; ``speed`` move speed; ``vision`` radius; ``atk_cd`` ticks until the next attack;
``target`` unit index attacked (-1 none); ``stun_t, slow_t, buff_t, heal_t, mregen_t`` ticks left of an
effect; ``slow_frac, buff_dmg, heal_rate, mregen_rate`` its strength; ``lane`` lane index of creeps and
lane buildings; ``wp`` next lane waypoint of a creep; ``home_x, home_y`` spawn point of neutrals;
``last_attacker`` unit that last damaged it; ``bounty_gold, bounty_xp``.

Hero table (``[G, H]``): ``hero_id`` (0-based index into ``data.HERO_NAMES``), ``level``, ``xp``, ``gold``,
``abil_id/abil_lvl/abil_cd`` ``[G, H, 4]`` (cooldown in ticks), ``item_id/item_chg/item_cd`` ``[G, H, 6]``,
``respawn_t`` ticks until respawn (0 when alive), ``buyback_cd`` ticks, ``extra_life`` (boss drop), ``kills,
deaths, last_hits, denies``, ``lane_assign`` (scripted lane of the hero), ``ord_type`` (0 idle, 1 move,
2 attack), ``ord_x, ord_y, ord_target``, ``aggro_t`` ticks during which creeps/towers prefer this hero (it hit an
enemy hero), ``item_plan`` ``[G, H, ITEM_PLAN_LEN]`` scripted purchases, ``plan_ptr``, ``prev_action``
``[G, H, 4]`` last action taken.

Per game (``[G]`` or ``[G, 2]``): ``tick``, ``winner``, ``done``, ``rng`` (xorshift64* state, one stream per
game), ``boss_respawn_t``, ``camp_respawn_t [G, n_camps]``, team stats ``kills, towers_destroyed,
barracks_destroyed, boss_kills, team_last_hits, team_denies``.

Fog of war: ``vis [G, 2, U]`` — unit visible to team t this step; ``ls_tick [G, 2, H]`` the tick at which team t
last saw hero h (-1 never) and ``ls_x, ls_y, ls_hp, ls_max_hp, ls_mana, ls_max_mana, ls_level`` its state then.

Encoding bookkeeping: ``slot_unit [G, A, n_targets]`` unit index held by each target slot of the last
observation (-1 empty), so ``step`` can turn a target slot back into a unit.
"""

from __future__ import annotations

from collections import namedtuple
from types import SimpleNamespace

import numpy as np

from fivectl.sim import data as D
from fivectl.sim.components import REWARD_COMPONENTS

UNIT_F64 = (
    "x",
    "y",
    "hp",
    "max_hp",
    "mana",
    "max_mana",
    "dmg",
    "armor",
    "rng_",
    "bat",
    "speed",
    "vision",
    "atk_cd",
    "stun_t",
    "slow_t",
    "slow_frac",
    "buff_t",
    "buff_dmg",
    "heal_t",
    "heal_rate",
    "mregen_t",
    "mregen_rate",
    "hp_regen",
    "mana_regen",
    "home_x",
    "home_y",
    "bounty_gold",
    "bounty_xp",
    "acq_range",
)
UNIT_I32 = ("alive", "team", "utype", "target", "lane", "wp", "last_attacker", "tier")
HERO_F64 = (
    "xp",
    "gold",
    "respawn_t",
    "buyback_cd",
    "ord_x",
    "ord_y",
    "aggro_t",
    "gold_spent_total",
    "start_x",
    "start_y",
)
HERO_F64_SLOTS = {"abil_cd": 4, "item_cd": D.N_ITEM_SLOTS}
HERO_I32 = (
    "hero_id",
    "level",
    "extra_life",
    "kills",
    "deaths",
    "last_hits",
    "denies",
    "lane_assign",
    "ord_type",
    "ord_target",
    "plan_ptr",
)
HERO_I32_SLOTS = {
    "abil_id": 4,
    "abil_lvl": 4,
    "item_id": D.N_ITEM_SLOTS,
    "item_chg": D.N_ITEM_SLOTS,
    "item_plan": D.ITEM_PLAN_LEN,
    "prev_action": 4,
}
GAME_F64 = ("boss_respawn_t", "boss_hp_mult")
GAME_F64_SLOTS = {"camp_respawn_t": len(D.CAMPS)}
# ``variant``: the game runs the environment change set by ``MobaEnv.set_change`` (drawn at its start); the rule
# knobs after it are that game's rules, set at its start from the change (``changes.py``) or today's defaults.
GAME_I64 = (
    "tick",
    "winner",
    "done",
    "variant",
    "wave_ticks",
    "mirror_moves",
    "new_item",
    "new_hero",
    "swap_credit",
)
GAME_I64_TEAMS = (
    "kills_t",
    "towers_destroyed",
    "barracks_destroyed",
    "boss_kills",
    "team_last_hits",
    "team_denies",
)
LASTSEEN = ("tick", "x", "y", "hp", "max_hp", "mana", "max_mana", "level")


def _columns(prefix, scalars, slots=None, pairs=()):
    """Column constants: PREFIX_NAME -> first column; fields with k slots take k columns."""
    cols, i = {}, 0
    for n in scalars:
        cols[f"{prefix}_{n.rstrip('_').upper()}"] = i
        i += 1
    for n, k in (slots or {}).items():
        cols[f"{prefix}_{n.upper()}"] = i
        i += k
    for n in pairs:
        cols[f"{prefix}_{n.upper()}"] = i
        i += 2
    return cols, i


_UF, N_UF = _columns("UF", UNIT_F64)
_UI, N_UI = _columns("UI", UNIT_I32)
_HF, N_HF = _columns("HF", HERO_F64, HERO_F64_SLOTS)
_HI, N_HI = _columns("HI", HERO_I32, HERO_I32_SLOTS)
_GF, N_GF = _columns("GF", GAME_F64, GAME_F64_SLOTS)
_GI, N_GI = _columns("GI", GAME_I64, None, GAME_I64_TEAMS)
_LS, N_LS = _columns("LS", LASTSEEN)
for _cols in (_UF, _UI, _HF, _HI, _GF, _GI, _LS):
    globals().update(_cols)
# The same constants as one read-only namespace, the public way for code outside the game to index the arrays
# of ``MobaEnv.core_state`` / ``MobaEnv.final_core`` (``CORE_STATE_COLUMNS.UF_X``); exported by ``fivectl.sim``.
_ALL_COLUMNS = {**_UF, **_UI, **_HF, **_HI, **_GF, **_GI, **_LS}
CORE_STATE_COLUMNS = namedtuple("CoreStateColumns", tuple(_ALL_COLUMNS))(**_ALL_COLUMNS)

# The compact state the kernels take: a handful of field-major arrays (one namedtuple argument with few
# members keeps numba calls cheap and compilation fast).
# ``sf, si, sb, srew`` are per-process scratch buffers: the kernels run with numba's allocator off (``_nrt=False``)
# because reference counting of array arguments dominated the cost of every kernel call.
State = namedtuple(
    "State",
    (
        "uf",
        "ui",
        "hf",
        "hi",
        "gf",
        "gi",
        "rng",
        "vis",
        "ls",
        "slot_unit",
        "bhead",
        "bnext",
        "sf",
        "si",
        "sb",
        "srew",
    ),
)
SCRATCH_MAX_COUNT = 64  # largest unit-set count the encoder's scratch allows

Layout = namedtuple(
    "Layout",
    (
        "n_units",
        "n_heroes",
        "team_size",
        "n_lanes",
        "bld_start",
        "bld_end",
        "neu_start",
        "neu_end",
        "boss",
        "creep_start",
        "n_camps",
        "b_team",
        "b_utype",
        "b_tier",
        "b_lane",
        "b_x",
        "b_y",
        "b_hp",
        "b_prot",
        "b_prot_all",
        "n_camp",
        "n_x",
        "n_y",
        "n_stats",
        "lane_pts",
        "walk",
        "lanegrid",
        "ancient",
    ),
)

Params = namedtuple(
    "Params",
    (
        "fps",
        "frameskip",
        "time_limit_ticks",
        "tiebreak",
        "fog",
        "rand_init",
        "rand_lanes",
        "rand_boss",
        "rand_lineup",
        "rand_items",
        "pool",
        "lineup",  # int32 [G, H]: hero id per hero slot for the next game of each slot, -1 = drawn from the pool
        "change",  # float64 [N_CK]: the environment change games draw at their start (CK_* below, changes.py)
    ),
)

# Columns of ``Params.change``: the fraction of new games that run the change, then the change's rule knobs
# (used by the games that draw it). A fraction of 0 draws nothing: every game is exactly the unchanged game.
CK_FRACTION, CK_WAVE_S, CK_MIRROR_MOVES, CK_NEW_ITEM, CK_NEW_HERO, CK_SWAP_CREDIT = range(6)
N_CK = 6


def no_change() -> np.ndarray:
    """``Params.change`` of the unchanged game."""
    change = np.zeros(N_CK, np.float64)
    change[CK_WAVE_S] = D.WAVE_INTERVAL_S
    return change


def build_layout(team_size: int, lanes: int) -> Layout:
    """Fixed slot layout and building/camp tables for a game configuration."""
    names = D.LANE_ORDER[lanes]
    lane_pts = np.stack([D.LANE_POINTS[n] for n in names]).astype(np.float64)
    H = 2 * team_size
    b_team, b_utype, b_tier, b_lane, b_x, b_y, b_hp, b_prot, b_prot_all = ([] for _ in range(9))
    ancient = np.zeros(2, dtype=np.int32)

    def add(team, utype, tier, lane, x, y, hp, prot=(-1, -1, -1), prot_all=False):
        b_team.append(team)
        b_utype.append(utype)
        b_tier.append(tier)
        b_lane.append(lane)
        b_x.append(x)
        b_y.append(y)
        b_hp.append(hp)
        b_prot.append(list(prot) + [-1] * (3 - len(prot)))
        b_prot_all.append(prot_all)
        return H + len(b_team) - 1

    for team in (0, 1):
        base = len(b_team)
        t3_of_lane = [H + base + 3 + 4 * li + 2 for li in range(lanes)]
        t4 = [H + base + 1, H + base + 2]
        ancient[team] = add(team, D.UT_ANCIENT, 0, -1, *D.ANCIENT_POS[team], D.ANCIENT_HP, t4, True)
        for k in range(2):
            off = D.T4_OFFSETS[k] * (1 if team == 0 else -1)
            add(team, D.UT_TOWER, 4, -1, *(D.ANCIENT_POS[team] + off), D.TOWER_HP[4], t3_of_lane, False)
        for li in range(lanes):
            first = H + len(b_team)
            for tier in (1, 2, 3):
                frac = D.TOWER_FRACTIONS[tier]
                pos = lane_point(lane_pts[li], frac if team == 0 else 1.0 - frac)
                prot = (-1,) if tier == 1 else (first + tier - 2,)
                add(team, D.UT_TOWER, tier, li, *pos, D.TOWER_HP[tier], prot, False)
            pos = lane_point(lane_pts[li], D.BARRACKS_FRACTION if team == 0 else 1.0 - D.BARRACKS_FRACTION)
            add(team, D.UT_BARRACKS, 0, li, *pos, D.BARRACKS_HP, (first + 2,), False)
    bld_start, bld_end = H, H + len(b_team)
    n_camps = len(D.CAMPS)
    n_camp, n_x, n_y, n_stats = [], [], [], []
    for c, (cx, cy, kind) in enumerate(D.CAMPS):
        for k in range(D.UNITS_PER_CAMP):
            n_camp.append(c)
            # side by side along (1, -1), a direction the map's reflection keeps: mirrored camps stay mirrored
            n_x.append(cx + (k - 0.5) * 85.0)
            n_y.append(cy - (k - 0.5) * 85.0)
            n_stats.append(D.NEUTRAL_LARGE if kind else D.NEUTRAL_SMALL)
    n_camp.append(-1)
    n_x.append(D.BOSS_POS[0])
    n_y.append(D.BOSS_POS[1])
    n_stats.append(D.BOSS)
    neu_start = bld_end
    neu_end = neu_start + len(n_camp)
    creep_start = neu_end
    n_units = creep_start + lanes * D.CREEP_SLOTS_PER_LANE
    return Layout(
        n_units=n_units,
        n_heroes=H,
        team_size=team_size,
        n_lanes=lanes,
        bld_start=bld_start,
        bld_end=bld_end,
        neu_start=neu_start,
        neu_end=neu_end,
        boss=neu_end - 1,
        creep_start=creep_start,
        n_camps=n_camps,
        b_team=np.array(b_team, np.int32),
        b_utype=np.array(b_utype, np.int32),
        b_tier=np.array(b_tier, np.int32),
        b_lane=np.array(b_lane, np.int32),
        b_x=np.array(b_x),
        b_y=np.array(b_y),
        b_hp=np.array(b_hp),
        b_prot=np.array(b_prot, np.int32),
        b_prot_all=np.array(b_prot_all, np.bool_),
        n_camp=np.array(n_camp, np.int32),
        n_x=np.array(n_x),
        n_y=np.array(n_y),
        n_stats=np.stack(n_stats),
        lane_pts=lane_pts,
        walk=D.walkable_grid(),
        lanegrid=D.lane_grid(lanes),
        ancient=ancient,
    )


def lane_point(pts: np.ndarray, frac: float) -> np.ndarray:
    """Point at fraction ``frac`` of the polyline's length."""
    seg = np.hypot(*(pts[1:] - pts[:-1]).T)
    s = frac * seg.sum()
    if s <= seg[0]:
        return pts[0] + (pts[1] - pts[0]) * (s / seg[0])
    return pts[1] + (pts[2] - pts[1]) * ((s - seg[0]) / seg[1])


def alloc_state(num_games: int, layout: Layout, n_agents: int, n_targets: int) -> State:
    G, U, H = num_games, layout.n_units, layout.n_heroes
    return State(
        uf=np.zeros((G, N_UF, U), np.float64),
        ui=np.zeros((G, N_UI, U), np.int32),
        hf=np.zeros((G, N_HF, H), np.float64),
        hi=np.zeros((G, N_HI, H), np.int32),
        gf=np.zeros((G, N_GF), np.float64),
        gi=np.zeros((G, N_GI), np.int64),
        rng=np.zeros(G, np.uint64),
        vis=np.zeros((G, 2, U), np.bool_),
        ls=np.zeros((G, N_LS, 2, H), np.float64),
        slot_unit=np.full((G, n_agents, max(n_targets, 1)), -1, np.int32),
        bhead=np.full((G, D.N_BUCKET_SIDE * D.N_BUCKET_SIDE), -1, np.int32),
        bnext=np.full((G, U), -1, np.int32),
        sf=np.zeros(2 * U + SCRATCH_MAX_COUNT, np.float64),
        si=np.zeros(U + SCRATCH_MAX_COUNT + D.N_HEROES, np.int64),
        sb=np.zeros(2 * U + SCRATCH_MAX_COUNT, np.bool_),
        srew=np.zeros((H, len(REWARD_COMPONENTS)), np.float64),
    )


def state_views(S: State) -> SimpleNamespace:
    """Named numpy views of the compact state (no copies), as documented in this module's docstring:
    ``v.x[g, u]``, ``v.alive[g, u]`` (int32 0/1), ``v.abil_cd[g, h, k]``, ``v.kills_t[g, team]``,
    ``v.ls_x[g, team, h]``, ``v.tick[g]``, ``v.vis[g, team, u]``, ``v.slot_unit[g, a, slot]``..."""
    v = {}
    for n in UNIT_F64:
        v[n] = S.uf[:, _UF[f"UF_{n.rstrip('_').upper()}"], :]
    for n in UNIT_I32:
        v[n] = S.ui[:, _UI[f"UI_{n.upper()}"], :]
    for n in HERO_F64:
        v[n] = S.hf[:, _HF[f"HF_{n.upper()}"], :]
    for n, k in HERO_F64_SLOTS.items():
        c = _HF[f"HF_{n.upper()}"]
        v[n] = S.hf[:, c : c + k, :].transpose(0, 2, 1)
    for n in HERO_I32:
        v[n] = S.hi[:, _HI[f"HI_{n.upper()}"], :]
    for n, k in HERO_I32_SLOTS.items():
        c = _HI[f"HI_{n.upper()}"]
        v[n] = S.hi[:, c : c + k, :].transpose(0, 2, 1)
    for n in GAME_F64:
        v[n] = S.gf[:, _GF[f"GF_{n.upper()}"]]
    for n, k in GAME_F64_SLOTS.items():
        c = _GF[f"GF_{n.upper()}"]
        v[n] = S.gf[:, c : c + k]
    for n in GAME_I64:
        v[n] = S.gi[:, _GI[f"GI_{n.upper()}"]]
    for n in GAME_I64_TEAMS:
        c = _GI[f"GI_{n.upper()}"]
        v[n] = S.gi[:, c : c + 2]
    for n in LASTSEEN:
        v[f"ls_{n}"] = S.ls[:, _LS[f"LS_{n.upper()}"]]
    v["vis"] = S.vis
    v["slot_unit"] = S.slot_unit
    v["rng"] = S.rng
    return SimpleNamespace(**v)
