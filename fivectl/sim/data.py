"""Game data of the embedded MOBA: heroes, abilities, items, creeps, buildings and the map.

Magnitudes follow Dota 2 (early 2019) so that the paper's reward weights (Table 6) keep their meaning: heroes
start with ~550-700 HP and grow ~70-100 HP per level, a lane creep is worth ~40-90 gold, towers have ~1800-2100
HP. Distances are in game units on a 12000 x 12000 map; speeds in units per second; times in seconds.

Everything here is plain numpy tables, indexed by the numba kernels in ``core.py`` and ``observe/``. Numba
freezes these tables into the compiled kernels; its cache directory is keyed by the sources of the compiled
packages (``fivectl/__init__.py``), so an edit here recompiles them. Code outside the game reads these through
``fivectl.sim``'s exports.
"""

from __future__ import annotations

import numpy as np

# ---- unit types (categorical "unit_type" in observations; 0 = padding) ----
UT_HERO, UT_MELEE, UT_RANGED, UT_TOWER, UT_BARRACKS, UT_ANCIENT, UT_NEUTRAL, UT_BOSS = 1, 2, 3, 4, 5, 6, 7, 8
N_UNIT_TYPES = 9

# ---- ability kinds ----
AK_NONE, AK_NUKE, AK_STUN, AK_SLOW, AK_AREA, AK_HEAL, AK_BLINK, AK_BUFF, AK_PASSIVE = range(9)
ABILITY_KIND_NAMES = ("none", "nuke", "stun", "slow", "area", "heal", "blink", "buff", "passive")
N_ABILITY_KINDS = 9

# Ability table columns.
(AB_KIND, AB_VAL, AB_VAL_LVL, AB_DUR, AB_SLOW, AB_MANA, AB_CD, AB_RANGE, AB_RADIUS, AB_MAXLVL, AB_ULT) = (
    range(11)
)
N_AB_COLS = 11

# name, kind, value at level 1, value per extra level, duration s, slow fraction, mana, cooldown s, cast range,
# radius, max level, ultimate.  value = damage (nuke/stun/slow/area), heal, blink distance, bonus attack damage
# (buff, passive).  Passives also give +armor = duration column.
_ABILITIES = [
    ("none", AK_NONE, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    ("ember_bolt", AK_NUKE, 90, 70, 0, 0, 100, 9, 600, 0, 4, 0),
    ("shatter_strike", AK_STUN, 70, 50, 1.5, 0, 110, 13, 550, 0, 4, 0),
    ("frost_lash", AK_SLOW, 60, 45, 3.0, 0.35, 90, 11, 650, 0, 4, 0),
    ("meteor_fall", AK_AREA, 100, 60, 0, 0, 120, 12, 750, 300, 4, 0),
    ("mending_light", AK_HEAL, 110, 60, 0, 0, 100, 14, 600, 0, 4, 0),
    ("shadow_step", AK_BLINK, 700, 100, 0, 0, 70, 14, 0, 0, 4, 0),
    ("war_cry", AK_BUFF, 20, 12, 6.0, 0, 60, 18, 0, 0, 4, 0),
    ("iron_hide", AK_PASSIVE, 6, 6, 2.0, 0, 0, 0, 0, 0, 4, 0),
    ("venom_spit", AK_SLOW, 50, 40, 4.0, 0.25, 80, 9, 700, 0, 4, 0),
    ("thunder_clap", AK_AREA, 80, 55, 0, 0, 100, 10, 400, 325, 4, 0),
    ("skull_bash", AK_STUN, 50, 40, 1.2, 0, 90, 10, 300, 0, 4, 0),
    ("soul_drain", AK_NUKE, 75, 55, 0, 0, 80, 7, 500, 0, 4, 0),
    ("tidal_surge", AK_AREA, 90, 50, 0, 0, 110, 11, 600, 350, 4, 0),
    ("spirit_ward", AK_HEAL, 80, 50, 0, 0, 80, 10, 800, 0, 4, 0),
    ("fleet_foot", AK_BLINK, 600, 125, 0, 0, 60, 12, 0, 0, 4, 0),
    ("bloodlust", AK_BUFF, 15, 10, 8.0, 0, 70, 20, 0, 0, 4, 0),
    ("keen_edge", AK_PASSIVE, 10, 8, 0.0, 0, 0, 0, 0, 0, 4, 0),
    ("chain_hex", AK_STUN, 40, 35, 2.0, 0, 130, 16, 600, 0, 4, 0),
    ("gravel_toss", AK_NUKE, 100, 60, 0, 0, 110, 10, 450, 0, 4, 0),
    ("mire_grasp", AK_SLOW, 40, 30, 3.5, 0.45, 100, 13, 550, 0, 4, 0),
    ("thorn_armor", AK_PASSIVE, 4, 4, 3.0, 0, 0, 0, 0, 0, 4, 0),
    # ultimates (levels 6/12/18)
    ("inferno", AK_AREA, 250, 125, 0, 0, 200, 70, 800, 400, 3, 1),
    ("judgement", AK_NUKE, 350, 150, 0, 0, 250, 80, 650, 0, 3, 1),
    ("petrify", AK_STUN, 150, 75, 2.5, 0, 200, 60, 600, 0, 3, 1),
    ("avatar", AK_BUFF, 50, 30, 10.0, 0, 150, 75, 0, 0, 3, 1),
    ("sanctuary", AK_HEAL, 350, 150, 0, 0, 200, 70, 700, 0, 3, 1),
    ("glacier", AK_SLOW, 200, 100, 4.0, 0.6, 200, 65, 700, 0, 3, 1),
    ("earthsplitter", AK_AREA, 300, 100, 0, 0, 225, 80, 900, 450, 3, 1),
    ("void_jump", AK_BLINK, 1200, 200, 0, 0, 100, 40, 0, 0, 3, 1),
]
ABILITY_NAMES = tuple(a[0] for a in _ABILITIES)
ABILITY_ID = {n: i for i, n in enumerate(ABILITY_NAMES)}
ABILITIES = np.array([a[1:] for a in _ABILITIES], dtype=np.float64)
N_ABILITIES = 40  # vocabulary size reserved in the schema (ids < N_ABILITIES)

# ---- heroes ----
(
    HS_HP,
    HS_HP_LVL,
    HS_MANA,
    HS_MANA_LVL,
    HS_DMG,
    HS_DMG_LVL,
    HS_ARMOR,
    HS_ARMOR_LVL,
    HS_RANGE,
    HS_BAT,
    HS_SPEED,
    HS_HP_REGEN,
    HS_MANA_REGEN,
) = range(13)
N_HS_COLS = 13
# name, hp, hp/lvl, mana, mana/lvl, dmg, dmg/lvl, armor, armor/lvl, attack range, attack interval s, move speed,
# hp regen/s, mana regen/s, abilities (ultimate last)
_HEROES = [
    (
        "Ashcaller",
        560,
        70,
        375,
        45,
        48,
        2.4,
        1,
        0.3,
        600,
        1.6,
        295,
        1.0,
        1.4,
        ("ember_bolt", "meteor_fall", "keen_edge", "inferno"),
    ),
    (
        "Brinewarden",
        700,
        95,
        250,
        25,
        55,
        3.0,
        4,
        0.4,
        150,
        1.7,
        300,
        2.5,
        0.8,
        ("tidal_surge", "skull_bash", "thorn_armor", "petrify"),
    ),
    (
        "Cinderfang",
        620,
        80,
        280,
        30,
        52,
        3.2,
        3,
        0.5,
        150,
        1.5,
        310,
        1.6,
        0.9,
        ("bloodlust", "soul_drain", "keen_edge", "avatar"),
    ),
    (
        "Duskweaver",
        540,
        65,
        400,
        50,
        45,
        2.2,
        1,
        0.3,
        575,
        1.7,
        290,
        0.9,
        1.6,
        ("chain_hex", "mending_light", "frost_lash", "sanctuary"),
    ),
    (
        "Emberlance",
        600,
        75,
        300,
        35,
        50,
        3.0,
        2,
        0.4,
        550,
        1.5,
        300,
        1.2,
        1.0,
        ("venom_spit", "keen_edge", "fleet_foot", "judgement"),
    ),
    (
        "Frostmantle",
        580,
        72,
        360,
        45,
        46,
        2.5,
        2,
        0.3,
        600,
        1.7,
        290,
        1.0,
        1.3,
        ("frost_lash", "meteor_fall", "iron_hide", "glacier"),
    ),
    (
        "Galeborn",
        590,
        70,
        320,
        40,
        49,
        2.9,
        2,
        0.45,
        625,
        1.5,
        305,
        1.1,
        1.1,
        ("fleet_foot", "ember_bolt", "keen_edge", "void_jump"),
    ),
    (
        "Hexwright",
        530,
        62,
        420,
        55,
        44,
        2.1,
        0,
        0.3,
        550,
        1.7,
        285,
        0.8,
        1.8,
        ("chain_hex", "soul_drain", "spirit_ward", "judgement"),
    ),
    (
        "Ironbark",
        720,
        100,
        240,
        22,
        58,
        3.1,
        5,
        0.5,
        150,
        1.7,
        290,
        3.0,
        0.7,
        ("thunder_clap", "iron_hide", "thorn_armor", "earthsplitter"),
    ),
    (
        "Jadeviper",
        570,
        70,
        330,
        40,
        47,
        2.8,
        2,
        0.45,
        600,
        1.6,
        300,
        1.1,
        1.2,
        ("venom_spit", "mire_grasp", "keen_edge", "glacier"),
    ),
    (
        "Kestrel",
        600,
        74,
        290,
        32,
        51,
        3.3,
        2,
        0.5,
        500,
        1.4,
        315,
        1.2,
        0.9,
        ("shadow_step", "war_cry", "keen_edge", "avatar"),
    ),
    (
        "Lumenpriest",
        550,
        66,
        410,
        52,
        43,
        2.0,
        1,
        0.3,
        600,
        1.7,
        290,
        1.0,
        1.7,
        ("mending_light", "spirit_ward", "ember_bolt", "sanctuary"),
    ),
    (
        "Mirecrawler",
        680,
        90,
        260,
        26,
        54,
        2.8,
        3,
        0.45,
        150,
        1.6,
        295,
        2.2,
        0.8,
        ("mire_grasp", "gravel_toss", "thorn_armor", "petrify"),
    ),
    (
        "Nightpike",
        610,
        78,
        300,
        34,
        53,
        3.4,
        3,
        0.5,
        150,
        1.4,
        320,
        1.4,
        0.9,
        ("shadow_step", "soul_drain", "bloodlust", "judgement"),
    ),
    (
        "Orebinder",
        700,
        92,
        270,
        28,
        56,
        2.9,
        4,
        0.45,
        150,
        1.7,
        285,
        2.6,
        0.8,
        ("gravel_toss", "shatter_strike", "iron_hide", "earthsplitter"),
    ),
    (
        "Quillshade",
        560,
        68,
        350,
        42,
        48,
        2.6,
        1,
        0.35,
        575,
        1.6,
        300,
        1.0,
        1.3,
        ("thunder_clap", "frost_lash", "war_cry"),
    ),
    (
        "Stormherald",
        590,
        72,
        380,
        46,
        47,
        2.5,
        2,
        0.35,
        625,
        1.6,
        295,
        1.0,
        1.5,
        ("tidal_surge", "shatter_strike", "fleet_foot", "inferno"),
    ),
]
# The 18th hero: only in games of the "new-hero" change (changes.py), which may draw it into lineups. It is not in
# HERO_NAMES / N_HEROES, the pool of the unchanged game (lineups, drafts); its id is NEW_HERO.
_NEW_HEROES = [
    (
        "Thornveil",
        600,
        76,
        340,
        40,
        50,
        2.8,
        2,
        0.4,
        525,
        1.5,
        305,
        1.3,
        1.2,
        ("venom_spit", "chain_hex", "thorn_armor", "glacier"),
    ),
]
HERO_NAMES = tuple(h[0] for h in _HEROES)
N_HEROES = len(HERO_NAMES)
ALL_HERO_NAMES = HERO_NAMES + tuple(h[0] for h in _NEW_HEROES)  # indexed by hero id, the change's hero included
NEW_HERO = N_HEROES
_ALL_HEROES = _HEROES + _NEW_HEROES
HERO_STATS = np.array([h[1:14] for h in _ALL_HEROES], dtype=np.float64)
HERO_ABILITIES = np.zeros((len(_ALL_HEROES), 4), dtype=np.int32)
for _i, _h in enumerate(_ALL_HEROES):
    for _k, _name in enumerate(_h[14]):  # 4-ability heroes have their ultimate in slot 3
        HERO_ABILITIES[_i, _k] = ABILITY_ID[_name]
HERO_VOCAB = N_HEROES + 1  # categorical hero ids are 1..17 (0 = padding)
MAX_TEAM_SIZE = 5  # the largest game.team_size; per-team-slot observations (lineups) have this width
MAX_LANES = 3  # the most lanes a map has; per-lane observations (schema v4) have this width

# ---- items ----
(IT_COST, IT_DMG, IT_ARMOR, IT_HP, IT_MANA, IT_SPEED, IT_ACTIVE, IT_VAL, IT_CD, IT_RANGE, IT_CHARGES) = range(
    11
)
N_IT_COLS = 11
IA_NONE, IA_HEAL, IA_MANA, IA_NUKE, IA_BLINK, IA_STUN = 0, 1, 2, 3, 4, 5
# name, cost, +dmg, +armor, +hp, +mana, +speed, active kind, active value, cooldown s, cast range, charges
_ITEMS = [
    ("empty", 0, 0, 0, 0, 0, 0, IA_NONE, 0, 0, 0, 0),
    ("healing_salve", 110, 0, 0, 0, 0, 0, IA_HEAL, 400, 1, 0, 1),  # 400 HP over 8 s
    ("clarity", 50, 0, 0, 0, 0, 0, IA_MANA, 180, 1, 0, 1),  # 180 mana over 12 s
    ("ember_wand", 2100, 0, 0, 0, 0, 0, IA_NUKE, 400, 35, 700, 0),  # active: 400 magic damage
    ("phase_dagger", 2250, 0, 0, 0, 0, 0, IA_BLINK, 1200, 15, 0, 0),  # active: blink up to 1200
    ("broadsword", 1000, 18, 0, 0, 0, 0, IA_NONE, 0, 0, 0, 0),
    ("chainmail", 550, 0, 5, 0, 0, 0, IA_NONE, 0, 0, 0, 0),
    ("vital_orb", 1100, 0, 0, 250, 0, 0, IA_NONE, 0, 0, 0, 0),
    ("mana_orb", 800, 0, 0, 0, 250, 0, IA_NONE, 0, 0, 0, 0),
    ("swift_boots", 500, 0, 0, 0, 0, 45, IA_NONE, 0, 0, 0, 0),
    ("claymore", 1400, 30, 0, 0, 0, 0, IA_NONE, 0, 0, 0, 0),
    ("plate_mail", 1400, 0, 10, 0, 0, 0, IA_NONE, 0, 0, 0, 0),
    # Only in games of the "storm-maul" change (fivectl/sim/changes.py): active: stun ITEM_STUN_S + 100 damage
    ("storm_maul", 2300, 10, 0, 0, 0, 0, IA_STUN, 100, 18, 600, 0),
]
ITEM_NAMES = tuple(i[0] for i in _ITEMS)
ITEM_ID = {n: i for i, n in enumerate(ITEM_NAMES)}
ITEMS = np.array([i[1:] for i in _ITEMS], dtype=np.float64)
N_ITEMS = 16  # vocabulary size reserved in the schema
N_ITEM_SLOTS = 6
# Restoring is unavailable (masked) when it would be wasted, the game-knowledge action mask of HoK §"Action
# mask": a healing salve needs HP below this fraction and no heal running, a clarity mana below it and no mana
# regeneration running, a heal ability a target hero below it. Without it, exploration drinks salves at full HP
# and the policy learns never to use them (0.4% of steps; benchmarks/RESULTS.md). The scripted bots heal below
# 0.6 and are not affected.
RESTORE_BELOW = 0.75
N_ACTIVE_SLOTS = 3  # slots 0-2: salve, clarity, active item (the "item1..3" actions); 3-5: stat items
ITEM_PLAN_LEN = 6
ACTIVE_CHOICES = np.array([ITEM_ID["ember_wand"], ITEM_ID["phase_dagger"]], dtype=np.int32)
# The change item (``changes.py``, "storm-maul") lives in slot NEW_ITEM_SLOT, the first stat slot, bought first;
# only the "item4" primary action uses it (an added action: ``fivectl surgery add-action``).
NEW_ITEM = ITEM_ID["storm_maul"]
NEW_ITEM_SLOT = N_ACTIVE_SLOTS
ITEM_STUN_S = 1.5
STAT_CHOICES = np.array(
    [
        ITEM_ID[n]
        for n in ("swift_boots", "broadsword", "chainmail", "vital_orb", "mana_orb", "claymore", "plate_mail")
    ],
    dtype=np.int32,
)

# ---- creeps, neutrals, buildings ----
(US_HP, US_DMG, US_ARMOR, US_RANGE, US_BAT, US_SPEED, US_VISION, US_GOLD, US_XP, US_ACQ) = range(10)
N_US_COLS = 10
# hp, dmg, armor, range, attack interval, speed, vision, gold bounty, xp bounty, acquisition range
MELEE_CREEP = np.array([550, 21, 2, 100, 1.0, 325, 750, 45, 57, 500], dtype=np.float64)
RANGED_CREEP = np.array([300, 23, 0, 500, 1.0, 325, 750, 60, 69, 500], dtype=np.float64)
NEUTRAL_SMALL = np.array([450, 22, 1, 100, 1.2, 300, 400, 48, 60, 300], dtype=np.float64)
NEUTRAL_LARGE = np.array([800, 38, 3, 100, 1.35, 300, 400, 80, 100, 300], dtype=np.float64)
BOSS = np.array([5500, 75, 20, 150, 1.0, 270, 400, 225, 400, 300], dtype=np.float64)
TOWER_HP = np.array([0, 1800, 2000, 2000, 2100], dtype=np.float64)  # by tier 1..4
TOWER_DMG = np.array([0, 100, 120, 140, 150], dtype=np.float64)
TOWER_ARMOR = 12.0
TOWER_RANGE = 700.0
TOWER_GOLD = 150.0  # to the last hitter; every hero of the team also gets TOWER_TEAM_GOLD
TOWER_TEAM_GOLD = 100.0
BARRACKS_HP = 1500.0
BARRACKS_GOLD = 150.0
ANCIENT_HP = 4250.0
BUILDING_ARMOR = 10.0
BUILDING_VISION = 1200.0

# ---- map ----
MAP_SIZE = 12000.0
ANCIENT_POS = np.array([[1000.0, 1000.0], [11000.0, 11000.0]])
FOUNTAIN_POS = np.array([[500.0, 500.0], [11500.0, 11500.0]])
T4_OFFSETS = np.array([[450.0, -150.0], [-150.0, 450.0]])
# Lane polylines from team 0's base to team 1's base (start, corner, end).
LANE_POINTS = {
    "top": np.array([[1200.0, 2200.0], [1200.0, 10800.0], [9800.0, 10800.0]]),
    "mid": np.array([[1500.0, 1500.0], [6000.0, 6000.0], [10500.0, 10500.0]]),
    "bot": np.array([[2200.0, 1200.0], [10800.0, 1200.0], [10800.0, 9800.0]]),
}
LANE_ORDER = {1: ("mid",), 3: ("top", "mid", "bot")}
TOWER_FRACTIONS = np.array([0.0, 0.38, 0.24, 0.11])  # tier 1..3, fraction of the lane from the owner's base
BARRACKS_FRACTION = 0.07
# Neutral camps: position, kind (0 small pair, 1 large pair)
CAMPS = np.array(
    [
        [4200, 2800, 0],
        [7000, 3600, 1],
        [2800, 4200, 0],
        [3600, 7000, 1],
        [7800, 9200, 0],
        [5000, 8400, 1],
        [9200, 7800, 0],
        [8400, 5000, 1],
    ],
    dtype=np.float64,
)
UNITS_PER_CAMP = 2
BOSS_POS = np.array([7300.0, 4700.0])
NEUTRAL_RESPAWN_S = 60.0
BOSS_RESPAWN_S = 300.0
LEASH_RANGE = 900.0
# Impassable blocks (jungle cliffs), x0, y0, x1, y1; lanes and camps are clear of them. The map is symmetric
# under the reflection (x, y) -> (MAP_SIZE - y, MAP_SIZE - x), which swaps the teams and keeps each lane: the
# blocks, camps, lanes, buildings and fountains come in such mirror pairs (tests/sim/test_symmetry.py).
BLOCKS = np.array(
    [
        [2200, 5000, 3200, 6200],
        [5800, 8800, 7000, 9800],
        [5000, 2200, 6200, 3200],
        [8800, 5800, 9800, 7000],
    ],
    dtype=np.float64,
)
TERRAIN_CELL = 250.0
TERRAIN_N = int(MAP_SIZE / TERRAIN_CELL)

# ---- rules ----
WAVE_INTERVAL_S = 30.0
FAST_WAVE_INTERVAL_S = 20.0  # the "fast-waves" change (changes.py)
WAVE_MELEE, WAVE_RANGED = 3, 1
CREEP_SLOTS_PER_LANE = 40
XP_RANGE = 1300.0
# A hero is on a lane within LANE_WIDTH of the lane's path, outside both bases (BASE_RADIUS around a fountain), for
# the team-play figures of evaluation (evaluate/teamplay.py); the lane assignment reward (paper O.2, core.off_lane)
# counts the own base as off the lane (unless an enemy is in it) and spares the enemy base.
LANE_WIDTH = 900.0
BASE_RADIUS = 2600.0
# A hero within PUSH_RADIUS of an enemy building when it loses HP is credited with the push (the building_near
# reward component): the team reward goes to all five wherever they are, this one only to those who were there.
PUSH_RADIUS = 1300.0
PASSIVE_GOLD_PER_S = 1.5
START_GOLD = 600.0
MAX_LEVEL = 25
HERO_VISION = 1200.0
OFFSET_CELL = 200.0  # the 9x9 offset grid spans +-800 units
BUYBACK_COOLDOWN_S = 240.0
BUYBACK_BASE = 100.0  # buyback costs BUYBACK_BASE + net worth / BUYBACK_NET_WORTH_DIV (Dota: 200 + NW/13)
BUYBACK_NET_WORTH_DIV = 13.0
AEGIS_RESPAWN_S = 5.0
MAGIC_RESIST = 0.25
DENY_HP_FRAC = 0.5
BUCKET_SIZE = 1250.0  # >= the largest vision / acquisition radius, so a 3x3 neighbourhood suffices
N_BUCKET_SIDE = int(MAP_SIZE / BUCKET_SIZE) + 1


def xp_table() -> np.ndarray:
    """Total XP needed to reach level l (index l), Dota-like: 240 for level 2, growing by ~+100 per level."""
    need = np.zeros(MAX_LEVEL + 2, dtype=np.float64)
    step = 240.0
    for lvl in range(2, MAX_LEVEL + 2):
        need[lvl] = need[lvl - 1] + step
        step += 100.0
    need[MAX_LEVEL + 1] = 1e18
    return need


XP_TABLE = xp_table()


def walkable_grid() -> np.ndarray:
    """uint8 [TERRAIN_N, TERRAIN_N] (x index, y index): 1 where units may stand."""
    w = np.ones((TERRAIN_N, TERRAIN_N), dtype=np.uint8)
    centers = (np.arange(TERRAIN_N) + 0.5) * TERRAIN_CELL
    for x0, y0, x1, y1 in BLOCKS:
        ix = (centers >= x0) & (centers <= x1)
        iy = (centers >= y0) & (centers <= y1)
        w[np.ix_(ix, iy)] = 0
    return w


def lane_grid(lanes: int) -> np.ndarray:
    """uint8 [TERRAIN_N, TERRAIN_N]: 1 within 400 units of a lane path."""
    g = np.zeros((TERRAIN_N, TERRAIN_N), dtype=np.uint8)
    c = (np.arange(TERRAIN_N) + 0.5) * TERRAIN_CELL
    px, py = np.meshgrid(c, c, indexing="ij")
    for name in LANE_ORDER[lanes]:
        pts = LANE_POINTS[name]
        for a, b in ((pts[0], pts[1]), (pts[1], pts[2])):
            d = b - a
            t = np.clip(((px - a[0]) * d[0] + (py - a[1]) * d[1]) / (d @ d), 0, 1)
            dist = np.hypot(px - (a[0] + t * d[0]), py - (a[1] + t * d[1]))
            g[dist <= 400] = 1
    return g
