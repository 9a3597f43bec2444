"""Game facts behind the auxiliary predictions of paper appendix D: heroes' net worth and team objectives.

The paper's "team objectives / enemy buildings" head predicts "whether this hero will help the team destroy a
given enemy building in the near future". Here an objective is a kind of enemy unit (:data:`OBJECTIVES`), and
a hero *helps destroy* one when, on the step it dies, the hero is alive and within ``data.XP_RANGE`` of it — the
radius within which the game shares the experience of a kill, i.e. the heroes taking part in the fight.

:class:`ObjectiveTracker` reads the state before and after a step (``before_step()`` then ``events(...)``): a few
array operations per step on [G, heroes, buildings] arrays, nothing per unit in Python. A game that ends is reset
inside ``env.step``, so its last step is read from the outcome: the winner destroyed the loser's ancient when the
game ended before the time limit; other objectives taken on a game's very last step are not seen.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fivectl.errors import BadInput
from fivectl.sim import data as D

OBJECTIVES: tuple[str, ...] = (
    "tower_t1",
    "tower_t2",
    "tower_t3",
    "tower_t4",
    "barracks",
    "ancient",
    "boss",
)
"""Objective names a model's ``aux_objectives`` may list."""


def check_objective_names(names: Sequence[str]) -> list[str]:
    """Error messages for unknown objective names (empty when all are known)."""
    unknown = [n for n in names if n not in OBJECTIVES]
    if not unknown:
        return []
    return [f"unknown objective(s) {', '.join(unknown)} (known: {', '.join(OBJECTIVES)})"]


def building_objectives(layout, names: Sequence[str]) -> np.ndarray:
    """float32 [n_buildings, len(names)]: 1 where building b counts as objective j (a tower by its tier)."""
    utype, tier = layout.b_utype, layout.b_tier
    kinds = {f"tower_t{k}": (utype == D.UT_TOWER) & (tier == k) for k in (1, 2, 3, 4)}
    kinds["barracks"] = utype == D.UT_BARRACKS
    kinds["ancient"] = utype == D.UT_ANCIENT
    kinds["boss"] = np.zeros(len(utype), dtype=bool)  # a neutral, not a building: tracked apart
    return np.stack([kinds[n] for n in names], axis=1).astype(np.float32).reshape(len(utype), len(names))


_ITEM_COST = np.ascontiguousarray(D.ITEMS[:, D.IT_COST])


def hero_networth(state) -> np.ndarray:
    """float32 [G, heroes]: gold plus the cost of the items held (the simulator's ``core.net_worth``)."""
    return (state.gold + np.take(_ITEM_COST, state.item_id).sum(axis=-1)).astype(np.float32)


class ObjectiveTracker:
    """Which heroes helped destroy which objective on each step of a :class:`fivectl.sim.MobaEnv`."""

    def __init__(self, env, names: Sequence[str]):
        errors = check_objective_names(names)
        if errors:
            raise BadInput(f"model.aux_objectives: {errors[0]}")
        layout = env.layout
        self.env = env
        self.names = tuple(names)
        self.n_heroes = layout.n_heroes
        self.bld = slice(layout.bld_start, layout.bld_end)
        self.bld_objective = building_objectives(layout, self.names)  # [nb, n]
        self.bld_x, self.bld_y = layout.b_x, layout.b_y
        hero_team = np.repeat(np.arange(2), env.team_size)
        self.enemy_building = layout.b_team[None, :] != hero_team[:, None]  # [H, nb]
        self.hero_team = hero_team
        self.ancient = layout.ancient - layout.bld_start  # [2] building index of each team's ancient
        self.ancient_col = self.names.index("ancient") if "ancient" in self.names else -1
        self.boss_col = self.names.index("boss") if "boss" in self.names else -1
        self.boss = layout.boss
        self.range2 = D.XP_RANGE * D.XP_RANGE
        self.time_limit_ticks = env.params.time_limit_ticks
        self.fps = env.params.fps

    def before_step(self) -> None:
        """Remember what the step may change: buildings alive, heroes' positions and life, boss kills."""
        s = self.env.state
        H = self.n_heroes
        self._bld_alive = s.alive[:, self.bld] != 0
        self._hero_x = s.x[:, :H].copy()
        self._hero_y = s.y[:, :H].copy()
        self._hero_alive = s.alive[:, :H] != 0
        if self.boss_col >= 0:
            self._boss_kills = s.boss_kills.copy()
            self._boss_x = s.x[:, self.boss].copy()
            self._boss_y = s.y[:, self.boss].copy()

    def events(self, done: np.ndarray, winner: np.ndarray, game_time: np.ndarray) -> np.ndarray:
        """bool [G, heroes, n]: hero h helped destroy objective j on the step just taken (``env.step``'s
        ``done``, ``info["winner"]`` and ``info["game_time"]``)."""
        s = self.env.state
        G, H = done.shape[0], self.n_heroes
        out = np.zeros((G, H, len(self.names)), dtype=bool)
        # A game that ended was reset: all its buildings are alive again, so none reads as destroyed here.
        destroyed = self._bld_alive & (s.alive[:, self.bld] == 0)
        if self.ancient_col >= 0 and done.any():
            before_limit = np.rint(np.asarray(game_time, np.float64) * self.fps) < self.time_limit_ticks
            by_ancient = np.flatnonzero(done & (winner >= 0) & before_limit)
            destroyed[by_ancient, self.ancient[1 - winner[by_ancient]]] = True
        if destroyed.any():
            near = _distance2(self._hero_x[:, :, None], self._hero_y[:, :, None], self.bld_x, self.bld_y)
            helped = (
                (near <= self.range2)
                & self._hero_alive[:, :, None]
                & destroyed[:, None, :]
                & self.enemy_building[None]
            )
            out |= (helped.astype(np.float32) @ self.bld_objective) > 0
        if self.boss_col >= 0:
            # Counters of a reset game drop to 0: only increases are kills.
            killed = s.boss_kills > self._boss_kills  # [G, 2]
            if killed.any():
                near = _distance2(self._hero_x, self._hero_y, self._boss_x[:, None], self._boss_y[:, None])
                out[:, :, self.boss_col] = (
                    killed[:, self.hero_team] & self._hero_alive & (near <= self.range2)
                )
        return out


def _distance2(x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray) -> np.ndarray:
    return (x0 - x1) ** 2 + (y0 - y1) ** 2
