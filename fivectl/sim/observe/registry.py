"""What the encoder can compute: each group's source and, per source, the registry of feature codes.

Adding a field = add ``name -> (code, width, kind)`` to the registry of its source here and a branch computing
the code in the matching ``*_feature`` function of ``features.py``; adding a group = add its source.
"""

from __future__ import annotations

from fivectl.sim import data as D

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
    # v4: the state of every lane's buildings, in the layout's lane order (top, mid, bot; the one lane of a
    # one-lane map first), 0 past the map's lanes. The buildings unit set holds only the closest ones, so without
    # these a hero does not see another lane's tower under attack. Own buildings are always seen by their team;
    # of the enemy's, only how many still stand (public knowledge, as towers_destroyed is).
    "ally_lane_hp": (212, D.MAX_LANES, "float"),
    "ally_front_hp": (213, D.MAX_LANES, "float"),
    "enemy_lane_standing": (214, D.MAX_LANES, "float"),
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
