"""Names of the raw per-hero reward components the game reports each step (paper appendix G, Table 6)."""

REWARD_COMPONENTS: tuple[str, ...] = (
    "win",
    "xp",
    "gold",
    "gold_spent",
    "health",
    "mana",
    "kill",
    "death",
    "last_hit",
    "deny",
    "extra_life",
    "ancient_hp",
    "tower_t1",
    "tower_t2",
    "tower_t3",
    "tower_t4",
    "barracks",
    "off_lane",
    "building_near",
    "consumed",
    "building_hit",
    "neutral_gold",
)
COMPONENT_INDEX = {name: i for i, name in enumerate(REWARD_COMPONENTS)}
