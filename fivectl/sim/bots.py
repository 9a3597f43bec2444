"""Scripted opponents of the embedded MOBA: ``bot:passive``, ``bot:easy``, ``bot:medium``.

The bots read the game state arrays (``env.state``, see ``state.py``) for what their team can see, and act through
the same action interface as the policy: a primary action allowed by ``action_mask``, a unit target given as a
slot of the last observation (``state.slot_unit``) allowed by ``target_mask``, a move or cast point given as an
offset on the 9x9 grid around the hero. So a bug in a bot shows up in the game's invalid-action counters.

- **passive** stays by its outermost lane tower and attacks only what attacks it or comes into its range.
- **easy** follows its lane creeps, attacks what is in range (heroes first), casts its abilities and its active
  item at the enemy hero when they are ready, drinks a salve when hurt and walks back to the fountain at low HP.
- **medium** plays like easy and also last-hits and denies, focuses low-health heroes, stays out of enemy tower
  range unless allied creeps are tanking the tower or no enemy hero is alive (and walks out when the tower aims
  at it), hits towers only then, clears creep waves with its area abilities, retreats earlier and blinks away
  when chased. It sieges: a building it may hit comes before creeps and healthy heroes, and it walks up to a
  tower its creeps are tanking (the time-limit tiebreak counts buildings destroyed, then building HP taken).

One numba kernel decides for every hero of the controlled team in every game of the batch.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np
from numba import njit

from fivectl.sim import core as C
from fivectl.sim import data as D

ABIL = D.ABILITIES
ITEMS = D.ITEMS
BOT_LEVELS = ("passive", "easy", "medium")
PASSIVE, EASY, MEDIUM = 0, 1, 2

# Tuning (game units, fractions of max HP). Retreat with hysteresis: leave the lane below LOW, come back above
# HIGH (the fountain heals 5% per second).
RETREAT_LOW = np.array([0.0, 0.25, 0.3])
RETREAT_HIGH = 0.85
SALVE_BELOW = 0.55
HEAL_BELOW = 0.6
FOCUS_HP_FRAC = 0.4
BOLD_ABOVE = 0.6
AREA_MIN_CREEPS = 3
PASSIVE_LEASH = 700.0
NEAR = 1300.0
TOWER_MARGIN = 150.0
SIEGE_WALK = 500.0


@dataclass
class BotMemory:
    """What a bot remembers between steps, per game and hero: whether it is walking back to heal."""

    retreating: np.ndarray  # bool [G, team_size]

    @classmethod
    def empty(cls, num_games: int, team_size: int) -> BotMemory:
        return cls(retreating=np.zeros((num_games, team_size), dtype=np.bool_))

    def forget(self, first: np.ndarray) -> None:
        """A new game started in the games where ``first`` is True."""
        self.retreating[np.asarray(first, dtype=bool)] = False


VIEW_FIELDS = (
    "alive", "team", "utype", "x", "y", "hp", "max_hp", "dmg", "armor", "rng_", "target", "lane", "buff_t",
    "buff_dmg", "heal_t", "lane_assign", "abil_id", "item_id", "vis", "slot_unit",
)  # fmt: skip
BotView = namedtuple("BotView", VIEW_FIELDS)
"""The state arrays the bots read, taken from ``env.state``'s named views (``state.state_views``)."""


def bot_view(state) -> BotView:
    return BotView(*(getattr(state, name) for name in VIEW_FIELDS))


def primary_table(act_kind: np.ndarray, act_slot: np.ndarray) -> np.ndarray:
    """[action kind, slot] -> index of that primary action in the schema (-1 if the schema lacks it)."""
    table = np.full((6, 4), -1, dtype=np.int64)
    for p, (kind, slot) in enumerate(zip(act_kind, act_slot, strict=True)):
        table[kind, slot] = p
    return table


def bot_actions(
    env,
    obs: dict,
    team: np.ndarray,
    level: str,
    memory: BotMemory,
    rng: np.random.Generator,
    games: np.ndarray | None = None,
):
    """Actions int32 ``[G, team_size, 4]`` of ``level``'s heroes on ``team[g]`` in every game, or only in the
    ``games`` (bool [G]) the bots play: the others' rows stay 0 and cost nothing (a trainer's bots play a few)."""
    del rng  # the bots are deterministic given the state
    out = np.zeros((env.num_games, env.team_size, 4), dtype=np.int32)
    active = np.ones(env.num_games, dtype=np.bool_) if games is None else np.asarray(games, dtype=np.bool_)
    decide_all(
        bot_view(env.state),
        env.layout,
        np.asarray(team, dtype=np.int64),
        active,
        BOT_LEVELS.index(level),
        obs["action_mask"],
        obs["target_mask"],
        primary_table(env.act_kind, env.act_slot),
        memory.retreating,
        out,
    )
    if env.frame is not None:  # the bots aim in the world frame; the env expects each team's own frame
        out[..., 3] = env.frame.offsets_for_team(out[..., 3], team)
        out[~active] = 0  # the frame maps offset 0 somewhere too: keep the games left out at 0
    return out


# ---------------------------------------------------------------- action encoding
@njit(cache=True)
def offset_toward(hx, hy, px, py):
    """The 9x9 offset (core.offset_point: cells of OFFSET_CELL, x = offset % 9) nearest the direction of (px, py),
    scaled down to the grid's reach when the point is farther."""
    dx = px - hx
    dy = py - hy
    reach = 4.0 * D.OFFSET_CELL
    m = max(abs(dx), abs(dy))
    if m > reach:
        dx *= reach / m
        dy *= reach / m
    cx = min(max(int(np.round(dx / D.OFFSET_CELL)), -4), 4)
    cy = min(max(int(np.round(dy / D.OFFSET_CELL)), -4), 4)
    return (cy + 4) * 9 + (cx + 4)


@njit(cache=True)
def slot_of(S, g, h, u, p, tmask):
    """The observation slot holding unit u that ``target_mask`` allows for primary p (-1: none)."""
    if p < 0 or u < 0:
        return -1
    for k in range(tmask.shape[3]):
        if S.slot_unit[g, h, k] == u and tmask[g, h, p, k]:
            return k
    return -1


@njit(cache=True)
def set_action(out, g, i, p, tslot, offset):
    out[g, i, 0] = p
    out[g, i, 1] = 0
    out[g, i, 2] = tslot
    out[g, i, 3] = offset


@njit(cache=True)
def try_attack(S, g, h, u, amask, tmask, prim, out, i):
    p = prim[C.ACT_ATTACK, 0]
    if p < 0 or u < 0 or not amask[g, h, p]:
        return False
    k = slot_of(S, g, h, u, p, tmask)
    if k < 0:
        return False
    set_action(out, g, i, p, k, 40)
    return True


@njit(cache=True)
def try_move(S, g, h, px, py, amask, prim, out, i):
    p = prim[C.ACT_MOVE, 0]
    if p < 0 or not amask[g, h, p]:
        return False
    off = offset_toward(S.x[g, h], S.y[g, h], px, py)
    if off == 40:  # already there
        return False
    set_action(out, g, i, p, 0, off)
    return True


# ---------------------------------------------------------------- what the team sees
@njit(cache=True)
def dist2(S, g, a, b):
    dx = S.x[g, a] - S.x[g, b]
    dy = S.y[g, a] - S.y[g, b]
    return dx * dx + dy * dy


@njit(cache=True)
def dist(S, g, a, b):
    return np.sqrt(dist2(S, g, a, b))


@njit(cache=True)
def seen(S, g, team, u):
    return S.alive[g, u] != 0 and S.vis[g, team, u]


@njit(cache=True)
def hit_damage(S, g, h, u):
    """Damage of h's next attack on u after armor (core.attack_or_chase / deal_damage)."""
    dmg = S.dmg[g, h]
    if S.buff_t[g, h] > 0.0:
        dmg += S.buff_dmg[g, h]
    return dmg * C.armor_mult(S.armor[g, u])


@njit(cache=True)
def lane_progress(S, g, team, u):
    """How far unit u is from team's ancient: larger is closer to the enemy base."""
    return np.hypot(S.x[g, u] - D.ANCIENT_POS[team, 0], S.y[g, u] - D.ANCIENT_POS[team, 1])


@njit(cache=True)
def front_creep(S, L, g, team, lane):
    """Team's lane creep farthest towards the enemy in ``lane`` (-1 if none)."""
    best = -1
    best_p = -1.0
    for u in range(L.creep_start, L.n_units):
        if S.alive[g, u] and S.team[g, u] == team and S.lane[g, u] == lane:
            p = lane_progress(S, g, team, u)
            if p > best_p:
                best_p = p
                best = u
    return best


@njit(cache=True)
def home_tower(S, L, g, team, lane):
    """Team's outermost standing tower of ``lane``, else a tier-4 tower, else the ancient."""
    best = -1
    best_p = -1.0
    for u in range(L.bld_start, L.bld_end):
        if S.alive[g, u] and S.team[g, u] == team and S.utype[g, u] == D.UT_TOWER:
            if S.lane[g, u] == lane or (best < 0 and S.lane[g, u] < 0):
                p = lane_progress(S, g, team, u) + (1e5 if S.lane[g, u] == lane else 0.0)
                if p > best_p:
                    best_p = p
                    best = u
    return best if best >= 0 else L.ancient[team]


@njit(cache=True)
def enemy_building_near(S, L, g, team, x, y, reach):
    """Closest standing enemy tower whose attack range (plus ``reach``) covers (x, y); -1 if none."""
    best = -1
    best_d = 1e30
    for u in range(L.bld_start, L.bld_end):
        if S.alive[g, u] and S.team[g, u] != team and S.utype[g, u] == D.UT_TOWER:
            d = np.hypot(S.x[g, u] - x, S.y[g, u] - y)
            if d <= S.rng_[g, u] + reach and d < best_d:
                best_d = d
                best = u
    return best


@njit(cache=True)
def all_enemies_dead(S, L, g, team):
    for u in range(L.n_heroes):
        if S.team[g, u] != team and S.alive[g, u] != 0:
            return False
    return True


@njit(cache=True)
def creeps_tanking(S, L, g, team, tower):
    """Team's creeps inside ``tower``'s attack range (they take its shots while they are there)."""
    n = 0
    r = S.rng_[g, tower]
    for u in range(L.creep_start, L.n_units):
        if S.alive[g, u] and S.team[g, u] == team and dist2(S, g, u, tower) <= r * r:
            n += 1
    return n


# ---------------------------------------------------------------- abilities and items
@njit(cache=True)
def try_cast_at_hero(S, g, h, enemy, amask, tmask, prim, out, i):
    """Cast a ready ability or active item at enemy hero ``enemy`` if one reaches it; True if cast."""
    d = dist(S, g, h, enemy)
    for k in range(4):
        p = prim[C.ACT_ABILITY, k]
        if p < 0 or not amask[g, h, p]:
            continue
        a = S.abil_id[g, h, k]
        kind = ABIL[a, D.AB_KIND]
        if kind == D.AK_NUKE or kind == D.AK_STUN or kind == D.AK_SLOW:
            t = slot_of(S, g, h, enemy, p, tmask)
            if t >= 0:
                set_action(out, g, i, p, t, 40)
                return True
        elif kind == D.AK_AREA:
            if d <= ABIL[a, D.AB_RANGE] + 0.5 * ABIL[a, D.AB_RADIUS]:
                set_action(out, g, i, p, 0, offset_toward(S.x[g, h], S.y[g, h], S.x[g, enemy], S.y[g, enemy]))
                return True
        elif kind == D.AK_BUFF:
            if d <= S.rng_[g, h] + 150.0:
                set_action(out, g, i, p, 0, 40)
                return True
    for k in range(D.N_ACTIVE_SLOTS):
        p = prim[C.ACT_ITEM, k]
        if p < 0 or not amask[g, h, p]:
            continue
        if ITEMS[S.item_id[g, h, k], D.IT_ACTIVE] == D.IA_NUKE:
            t = slot_of(S, g, h, enemy, p, tmask)
            if t >= 0:
                set_action(out, g, i, p, t, 40)
                return True
    return False


@njit(cache=True)
def try_area_on_creeps(S, L, g, h, team, amask, prim, out, i):
    """Clear a creep wave with an area ability: cast on the enemy creep with the most enemy creeps around it,
    when that catches at least AREA_MIN_CREEPS (a wave cleared fast lets the own creeps push)."""
    for k in range(4):
        p = prim[C.ACT_ABILITY, k]
        a = S.abil_id[g, h, k]
        if p < 0 or not amask[g, h, p] or ABIL[a, D.AB_KIND] != D.AK_AREA:
            continue
        reach = ABIL[a, D.AB_RANGE]
        r2 = ABIL[a, D.AB_RADIUS] ** 2
        best = -1
        best_n = AREA_MIN_CREEPS - 1
        for c in range(L.creep_start, L.n_units):
            if S.team[g, c] == team or not seen(S, g, team, c) or dist(S, g, h, c) > reach:
                continue
            n = 0
            for v in range(L.creep_start, L.n_units):
                if S.team[g, v] != team and seen(S, g, team, v) and dist2(S, g, c, v) <= r2:
                    n += 1
            if n > best_n:
                best_n = n
                best = c
        if best >= 0:
            set_action(out, g, i, p, 0, offset_toward(S.x[g, h], S.y[g, h], S.x[g, best], S.y[g, best]))
            return True
    return False


@njit(cache=True)
def try_heal_self(S, g, h, amask, tmask, prim, out, i):
    """A heal ability on oneself, else a healing salve (not while one is already working)."""
    for k in range(4):
        p = prim[C.ACT_ABILITY, k]
        if p >= 0 and amask[g, h, p] and ABIL[S.abil_id[g, h, k], D.AB_KIND] == D.AK_HEAL:
            t = slot_of(S, g, h, h, p, tmask)
            if t >= 0:
                set_action(out, g, i, p, t, 40)
                return True
    if S.heal_t[g, h] > 0.0:
        return False
    for k in range(D.N_ACTIVE_SLOTS):
        p = prim[C.ACT_ITEM, k]
        if p >= 0 and amask[g, h, p] and ITEMS[S.item_id[g, h, k], D.IT_ACTIVE] == D.IA_HEAL:
            set_action(out, g, i, p, 0, 40)
            return True
    return False


@njit(cache=True)
def try_blink_toward(S, g, h, px, py, amask, prim, out, i):
    """Blink (ability or item) towards (px, py)."""
    off = offset_toward(S.x[g, h], S.y[g, h], px, py)
    for k in range(4):
        p = prim[C.ACT_ABILITY, k]
        if p >= 0 and amask[g, h, p] and ABIL[S.abil_id[g, h, k], D.AB_KIND] == D.AK_BLINK:
            set_action(out, g, i, p, 0, off)
            return True
    for k in range(D.N_ACTIVE_SLOTS):
        p = prim[C.ACT_ITEM, k]
        if p >= 0 and amask[g, h, p] and ITEMS[S.item_id[g, h, k], D.IT_ACTIVE] == D.IA_BLINK:
            set_action(out, g, i, p, 0, off)
            return True
    return False


# ---------------------------------------------------------------- decisions
@njit(cache=True)
def decide_all(S, L, team, active, level, amask, tmask, prim, retreating, out):
    for g in range(team.shape[0]):
        if not active[g]:
            continue
        for i in range(L.team_size):
            h = team[g] * L.team_size + i
            set_action(out, g, i, 0 if prim[C.ACT_NOOP, 0] < 0 else prim[C.ACT_NOOP, 0], 0, 40)
            if not S.alive[g, h]:
                continue
            if level == PASSIVE:
                decide_passive(S, L, g, h, i, amask, tmask, prim, out)
            else:
                decide_laner(S, L, g, h, i, level, amask, tmask, prim, retreating, out)


@njit(cache=True)
def decide_passive(S, L, g, h, i, amask, tmask, prim, out):
    team = S.team[g, h]
    home = home_tower(S, L, g, team, S.lane_assign[g, h])
    # what attacks it, if it can reach it without leaving its tower; else what is already in range
    best = -1
    best_d = 1e30
    for u in range(L.n_units):
        if not seen(S, g, team, u) or S.team[g, u] == team or S.team[g, u] == 2:
            continue
        d = dist(S, g, h, u)
        attacks_me = S.target[g, u] == h
        if (attacks_me and dist(S, g, home, u) <= PASSIVE_LEASH + S.rng_[g, h]) or d <= S.rng_[g, h]:
            score = d - (1e4 if attacks_me else 0.0)
            if score < best_d:
                best_d = score
                best = u
    if best >= 0 and try_attack(S, g, h, best, amask, tmask, prim, out, i):
        return
    # stand behind the tower, on the own-base side
    tx = S.x[g, home] + (D.ANCIENT_POS[team, 0] - S.x[g, home]) * 0.05
    ty = S.y[g, home] + (D.ANCIENT_POS[team, 1] - S.y[g, home]) * 0.05
    if np.hypot(S.x[g, h] - tx, S.y[g, h] - ty) > 250.0:
        try_move(S, g, h, tx, ty, amask, prim, out, i)


@njit(cache=True)
def decide_laner(S, L, g, h, i, level, amask, tmask, prim, retreating, out):
    """bot:easy and bot:medium."""
    team = S.team[g, h]
    lane = S.lane_assign[g, h]
    hp_frac = S.hp[g, h] / S.max_hp[g, h]
    medium = level == MEDIUM

    if hp_frac < RETREAT_LOW[level]:
        retreating[g, i] = True
    elif hp_frac >= RETREAT_HIGH:
        retreating[g, i] = False

    # the enemy hero to play against: the closest seen one (medium: the weakest within reach)
    enemy = -1
    enemy_score = 1e30
    for u in range(L.n_heroes):
        if S.team[g, u] != team and seen(S, g, team, u):
            d = dist(S, g, h, u)
            if d > NEAR:
                continue
            score = d
            if medium:
                score = S.hp[g, u] / S.max_hp[g, u] * 2000.0 + d
            if score < enemy_score:
                enemy_score = score
                enemy = u

    if retreating[g, i]:
        if hp_frac < SALVE_BELOW and try_heal_self(S, g, h, amask, tmask, prim, out, i):
            return
        fx, fy = D.FOUNTAIN_POS[team, 0], D.FOUNTAIN_POS[team, 1]
        if medium and enemy >= 0 and dist(S, g, h, enemy) < 700.0:
            if try_blink_toward(S, g, h, fx, fy, amask, prim, out, i):
                return
        try_move(S, g, h, fx, fy, amask, prim, out, i)
        return

    if hp_frac < HEAL_BELOW and try_heal_self(S, g, h, amask, tmask, prim, out, i):
        return

    # medium: while every enemy hero is dead nobody defends, so it may take tower shots to push
    careful = medium and not (all_enemies_dead(S, L, g, team) and hp_frac > BOLD_ABOVE)

    # medium never stands in an enemy tower's range without creeps to take its shots; nobody stays while the
    # tower is shooting at it
    tower = enemy_building_near(S, L, g, team, S.x[g, h], S.y[g, h], TOWER_MARGIN)
    covered = tower >= 0 and creeps_tanking(S, L, g, team, tower) > 0
    if tower >= 0 and (S.target[g, tower] == h or (careful and not covered)):
        if step_out_of_range(S, g, h, team, tower, amask, prim, out, i):
            return

    if enemy >= 0:
        enemy_frac = S.hp[g, enemy] / S.max_hp[g, enemy]
        # medium does not chase into a tower without cover
        safe = True
        if medium:
            t_near = enemy_building_near(S, L, g, team, S.x[g, enemy], S.y[g, enemy], 0.0)
            safe = t_near < 0 or creeps_tanking(S, L, g, team, t_near) > 0
        if safe and (not medium or enemy_frac < 0.75 or hp_frac > 0.5):
            if try_cast_at_hero(S, g, h, enemy, amask, tmask, prim, out, i):
                return
        if medium and safe and enemy_frac < FOCUS_HP_FRAC and dist(S, g, h, enemy) <= S.rng_[g, h] + 400.0:
            if try_attack(S, g, h, enemy, amask, tmask, prim, out, i):
                return

    if medium and enemy < 0 and try_area_on_creeps(S, L, g, h, team, amask, prim, out, i):
        return

    # denying next to an enemy tower would kill the creeps that tank it
    if medium and last_hit_or_deny(S, L, g, h, team, tower < 0, amask, tmask, prim, out, i):
        return

    # easy: anything in range, heroes first; medium: buildings first (the time-limit tiebreak counts building
    # damage), towers only with creep cover
    target = target_in_range(S, L, g, h, team, careful, medium, tmask, prim)
    if target >= 0 and try_attack(S, g, h, target, amask, tmask, prim, out, i):
        return

    # follow the lane creeps (a little behind the front one), else wait at the home tower
    front = front_creep(S, L, g, team, lane)
    if front >= 0:
        tx, ty = S.x[g, front], S.y[g, front]
        back = D.ANCIENT_POS[team]
        d = np.hypot(back[0] - tx, back[1] - ty)
        tx += (back[0] - tx) / d * 150.0
        ty += (back[1] - ty) / d * 150.0
        if careful:
            t_near = enemy_building_near(S, L, g, team, tx, ty, TOWER_MARGIN)
            if t_near >= 0 and creeps_tanking(S, L, g, team, t_near) == 0:
                front = -1
        if front >= 0 and np.hypot(S.x[g, h] - tx, S.y[g, h] - ty) > 200.0:
            try_move(S, g, h, tx, ty, amask, prim, out, i)
            return
        if front >= 0:
            return
    home = home_tower(S, L, g, team, lane)
    if lane_progress(S, g, team, h) > lane_progress(S, g, team, home):
        return  # hold the ground won and wait for the next wave (an idle hero hits what comes into range)
    tx = S.x[g, home] + (D.ANCIENT_POS[team, 0] - S.x[g, home]) * 0.05
    ty = S.y[g, home] + (D.ANCIENT_POS[team, 1] - S.y[g, home]) * 0.05
    if np.hypot(S.x[g, h] - tx, S.y[g, h] - ty) > 250.0:
        try_move(S, g, h, tx, ty, amask, prim, out, i)


@njit(cache=True)
def step_out_of_range(S, g, h, team, tower, amask, prim, out, i):
    """Walk to just outside ``tower``'s range, on the side of the own base."""
    bx = D.ANCIENT_POS[team, 0] - S.x[g, tower]
    by = D.ANCIENT_POS[team, 1] - S.y[g, tower]
    d = np.hypot(bx, by)
    r = S.rng_[g, tower] + TOWER_MARGIN + 100.0
    return try_move(S, g, h, S.x[g, tower] + bx / d * r, S.y[g, tower] + by / d * r, amask, prim, out, i)


@njit(cache=True)
def last_hit_or_deny(S, L, g, h, team, deny, amask, tmask, prim, out, i):
    """Attack a creep the next hit kills: an enemy one (last hit) or, if ``deny``, a deniable allied one."""
    best = -1
    best_hp = 1e30
    reach = S.rng_[g, h] + 150.0
    for u in range(L.creep_start, L.n_units):
        if not seen(S, g, team, u) or dist(S, g, h, u) > reach:
            continue
        if S.hp[g, u] > hit_damage(S, g, h, u):
            continue
        if S.team[g, u] == team and (not deny or S.hp[g, u] >= D.DENY_HP_FRAC * S.max_hp[g, u]):
            continue
        if S.hp[g, u] < best_hp:
            best_hp = S.hp[g, u]
            best = u
    return best >= 0 and try_attack(S, g, h, best, amask, tmask, prim, out, i)


@njit(cache=True)
def target_in_range(S, L, g, h, team, careful, siege, tmask, prim):
    """The enemy to hit from here: a hero in range, else the weakest creep in range, else a building in range
    (``careful``: only a tower that allied creeps are tanking, or a barracks/ancient; ``siege``: the building
    comes first). Only units the attack's ``target_mask`` allows (e.g. no building its protectors still
    shield)."""
    reach = S.rng_[g, h] + 50.0
    p_attack = prim[C.ACT_ATTACK, 0]
    hero = -1
    creep = -1
    building = -1
    creep_hp = 1e30
    for u in range(L.n_units):
        if S.team[g, u] == team or S.team[g, u] == 2 or not seen(S, g, team, u):
            continue
        is_building = u >= L.bld_start and u < L.bld_end
        # sieging, a building a short walk away is worth the walk (melee heroes must stand next to it)
        limit = reach + SIEGE_WALK if siege and is_building else reach
        if dist(S, g, h, u) > limit or slot_of(S, g, h, u, p_attack, tmask) < 0:
            continue
        if u < L.n_heroes:
            hero = u
        elif u >= L.creep_start:
            if S.hp[g, u] < creep_hp:
                creep_hp = S.hp[g, u]
                creep = u
        elif is_building:
            if not careful or S.utype[g, u] != D.UT_TOWER or creeps_tanking(S, L, g, team, u) > 0:
                building = u
    if siege:
        if building >= 0:
            return building
        if creep >= 0:
            return creep
    if hero >= 0:
        return hero
    if creep >= 0:
        return creep
    return building


__all__ = ["BOT_LEVELS", "BotMemory", "bot_actions", "primary_table"]
