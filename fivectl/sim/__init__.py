"""The embedded MOBA, behind one door: this package's names are the game's public API.

Code outside ``fivectl.sim`` imports from here only (``tests/sim/test_public_api.py`` checks it); the modules
inside are the game's own: ``core`` (the numba rules), ``state`` (the state arrays and map layout), ``data``
(heroes, abilities, items, map), ``observe`` (the observation encoder), ``env`` (``MobaEnv``), ``bots``,
``objectives``, ``lineup``, ``changes``. ``fivectl.sim.parallel_env`` is the PettingZoo ParallelEnv adapter for
users, imported on its own. The game reads the observation schema's data model (``fivectl.schema``); the
schema imports nothing from the game.
"""

from fivectl.sim.bots import BOT_LEVELS, BotMemory, bot_actions
from fivectl.sim.changes import CHANGES, HERO_ID_FIELDS, get_change, hero_vocab, missing_surgery
from fivectl.sim.components import COMPONENT_INDEX, REWARD_COMPONENTS
from fivectl.sim.data import (
    BASE_RADIUS,
    BLOCKS,
    CAMPS,
    FOUNTAIN_POS,
    HERO_NAMES,
    LANE_ORDER,
    LANE_POINTS,
    LANE_WIDTH,
    MAP_SIZE,
    MAX_TEAM_SIZE,
    UT_ANCIENT,
    UT_BARRACKS,
    UT_BOSS,
    UT_HERO,
    UT_MELEE,
    UT_NEUTRAL,
    UT_RANGED,
    UT_TOWER,
    XP_RANGE,
)
from fivectl.sim.env import HOLD, PRIMARY_ACTIONS, STAT_NAMES, MobaEnv, resolve_pool, sample_valid_actions
from fivectl.sim.lineup import check_lineup, format_lineup, hero_id, hero_names, parse_lineup, parse_team
from fivectl.sim.objectives import OBJECTIVES, ObjectiveTracker, check_objective_names, hero_networth
from fivectl.sim.state import CORE_STATE_COLUMNS, build_layout

__all__ = [
    # the batched game
    "HOLD",
    "PRIMARY_ACTIONS",
    "STAT_NAMES",
    "MobaEnv",
    "resolve_pool",
    "sample_valid_actions",
    # rewards and auxiliary objectives
    "COMPONENT_INDEX",
    "OBJECTIVES",
    "REWARD_COMPONENTS",
    "ObjectiveTracker",
    "check_objective_names",
    "hero_networth",
    # scripted bots
    "BOT_LEVELS",
    "BotMemory",
    "bot_actions",
    # heroes and lineups
    "HERO_NAMES",
    "MAX_TEAM_SIZE",
    "check_lineup",
    "format_lineup",
    "hero_id",
    "hero_names",
    "parse_lineup",
    "parse_team",
    # environment changes
    "CHANGES",
    "HERO_ID_FIELDS",
    "get_change",
    "hero_vocab",
    "missing_surgery",
    # state arrays (column indices of ``MobaEnv.core_state``) and the map layout
    "CORE_STATE_COLUMNS",
    "build_layout",
    # the map and unit types (renderers, replays)
    "BASE_RADIUS",
    "BLOCKS",
    "CAMPS",
    "FOUNTAIN_POS",
    "LANE_ORDER",
    "LANE_POINTS",
    "LANE_WIDTH",
    "MAP_SIZE",
    "UT_ANCIENT",
    "UT_BARRACKS",
    "UT_BOSS",
    "UT_HERO",
    "UT_MELEE",
    "UT_NEUTRAL",
    "UT_RANGED",
    "UT_TOWER",
    "XP_RANGE",
]
