"""Pick advice from a draft table: minimax (or expectimax against a random drafter) over the remaining picks.

Paper App. D.2 drafts "the best hero available on each turn" with dynamic programming over the precomputed win
probabilities. A draft state is the pair of teams picked so far (bitmasks over pool positions); the draft order
(e.g. 1-2-2-2-2-1: team A picks 1, team B 2, ...) fixes whose turn it is. Team 0 maximizes P(team 0 wins),
team 1 minimizes it; in ``expectimax`` mode the side not being advised picks uniformly at random. Values of
states are memoized in one dense array per depth, indexed by the colex rank of the state (as the table's
lineups are), so every state is solved once; the search is compiled (numba).

Solving a whole 5v5 draft from the first pick visits about 5.8 million states (seconds). ``precompute`` therefore
stores, with a finished table, the solved minimax values of every state of the standard order for either team
opening (:func:`store_search_caches`); a query without bans in that order then only reads them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from fivectl.draft.lineups import pair_rank
from fivectl.draft.table import DraftTable
from fivectl.errors import BadInput
from fivectl.sim import data as D
from fivectl.sim.lineup import hero_id, parse_team

MINIMAX, EXPECTIMAX = 0, 1
MODES = {"minimax": MINIMAX, "expectimax": EXPECTIMAX}


def parse_order(text: str, team_size: int) -> list[int]:
    """``"1-2-2-2-2-1"`` -> group sizes; they alternate teams and must sum to both teams' sizes."""
    try:
        groups = [int(p) for p in text.replace(",", "-").split("-") if p.strip()]
    except ValueError:
        raise BadInput(f"--order {text!r}: expected pick counts like 1-2-2-2-2-1") from None
    if not groups or min(groups) < 1 or sum(groups) != 2 * team_size:
        raise BadInput(
            f"--order {text!r}: the picks must sum to {2 * team_size} ({team_size} per team), got {sum(groups)}"
        )
    per_team = [sum(groups[0::2]), sum(groups[1::2])]
    if per_team != [team_size, team_size]:
        raise BadInput(f"--order {text!r}: gives the teams {per_team[0]} and {per_team[1]} picks, not {team_size}")
    return groups


def turn_teams(groups: list[int], first: int) -> np.ndarray:
    """int64 [2k]: the team (0/1) making each pick, the first group being ``first``'s."""
    return np.array([first ^ (i % 2) for i, g in enumerate(groups) for _ in range(g)], dtype=np.int64)


@dataclass
class Advice:
    team: int  # the team to pick (0/1)
    pick: str
    value: float  # P(team 0 wins) after the pick, with best play (or random opponent) from there
    win_prob: float  # the same value from the picking team's point of view
    alternatives: list[tuple[str, float]]  # (hero, win_prob for the picking team), best first
    picks_made: int


@dataclass
class DraftState:
    teams: tuple[list[int], list[int]]  # hero ids picked by team 0, team 1
    bans: list[int]


def parse_picks(text: str, team_size: int) -> tuple[list[int], list[int]]:
    """``"A,B | C"``: team 0's picks, then team 1's (either may be empty)."""
    parts = text.split("|")
    if len(parts) != 2:
        raise BadInput(f"--picks {text!r}: expected team 0's picks | team 1's picks, e.g. 'Ashcaller | Kestrel'")
    teams = [parse_team(p).tolist() for p in parts]
    for t, ids in enumerate(teams):
        if len(ids) > team_size:
            raise BadInput(f"--picks: team {t} has {len(ids)} heroes, a team has {team_size}")
    return teams[0], teams[1]


class Drafter:
    """Search over one table: ``advise(state)`` for the next pick of whoever's turn it is."""

    def __init__(self, table: DraftTable, groups: list[int], first: int = 0, mode: str = "minimax"):
        if mode not in MODES:
            raise BadInput(f"--mode: minimax or expectimax, got {mode!r}")
        self.table, self.space = table, table.space
        self.turns = turn_teams(groups, first)
        self.mode = MODES[mode]
        self.k = self.space.k
        self.pos = {int(h): i for i, h in enumerate(self.space.pool)}
        self.cache = load_search_cache(table, groups, first) if self.mode == MINIMAX else None

    def check(self, state: DraftState) -> None:
        seen = state.teams[0] + state.teams[1] + state.bans
        dup = sorted({h for h in seen if seen.count(h) > 1})
        if dup:
            raise BadInput(f"picks/bans: {', '.join(D.HERO_NAMES[h] for h in dup)} chosen twice")
        outside = [h for h in seen if h not in self.pos]
        if outside:
            raise BadInput(f"{', '.join(D.HERO_NAMES[h] for h in outside)} not in the table's hero pool")
        made = len(state.teams[0]) + len(state.teams[1])
        want = [int((self.turns[:made] == t).sum()) for t in (0, 1)]
        have = [len(state.teams[0]), len(state.teams[1])]
        if have != want:
            raise BadInput(
                f"picks: team 0 has {have[0]} and team 1 {have[1]} heroes; after {made} picks the order gives "
                f"{want[0]} and {want[1]}"
            )
        free = len(self.pos) - len(seen)
        if free < len(self.turns) - made:
            raise BadInput(f"only {free} heroes left for {len(self.turns) - made} picks (too many bans)")

    def _masks(self, state: DraftState) -> tuple[int, int, int]:
        def mask(ids):
            return sum(1 << self.pos[h] for h in ids)

        return mask(state.teams[0]), mask(state.teams[1]), mask(state.bans)

    def value(self, state: DraftState, me: int | None = None) -> float:
        """P(team 0 wins) of a state with the remaining picks played out by the search (``me``: the side
        advised in expectimax mode; default the side to pick)."""
        self.check(state)
        m0, m1, bans = self._masks(state)
        t = len(state.teams[0]) + len(state.teams[1])
        me = int(self.turns[t]) if me is None and t < len(self.turns) else (me or 0)
        memo, offsets = self._memo(t, bans)
        return float(
            solve(m0, m1, bans, t, self.turns, me, self.mode, self.space.n, self.k, self.space.binom,
                  self.table.values, memo, offsets)
        )  # fmt: skip

    def advise(self, state: DraftState, top: int = 5) -> Advice:
        self.check(state)
        t = len(state.teams[0]) + len(state.teams[1])
        if t >= len(self.turns):
            raise BadInput("the draft is complete: no pick left to advise")
        team = int(self.turns[t])
        m0, m1, bans = self._masks(state)
        memo, offsets = self._memo(t + 1, bans)
        n = self.space.n
        heroes, values = [], []
        for p in range(n):
            if ((m0 | m1 | bans) >> p) & 1:
                continue
            c0, c1 = (m0 | 1 << p, m1) if team == 0 else (m0, m1 | 1 << p)
            v = solve(c0, c1, bans, t + 1, self.turns, team, self.mode, n, self.k, self.space.binom,
                      self.table.values, memo, offsets)  # fmt: skip
            heroes.append(int(self.space.pool[p]))
            values.append(float(v))
        mine = np.array(values) if team == 0 else 1.0 - np.array(values)
        order = np.argsort(-mine, kind="stable")
        best = int(order[0])
        return Advice(
            team=team,
            pick=D.HERO_NAMES[heroes[best]],
            value=values[best],
            win_prob=float(mine[best]),
            alternatives=[(D.HERO_NAMES[heroes[i]], float(mine[i])) for i in order[:top]],
            picks_made=t,
        )

    def _memo(self, t0: int, bans: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """The stored solution when it applies (minimax, no bans), else a NaN-filled memo"""
        if self.cache is not None and bans == 0:
            return self.cache, self._memo_layout(0)[1]
        return self._memo_layout(t0)

    def solve_all(self) -> np.ndarray:
        """Memo of every state from the first pick on, solved (minimax, no bans)."""
        memo, offsets = self._memo_layout(0)
        solve(0, 0, 0, 0, self.turns, 0, MINIMAX, self.space.n, self.k, self.space.binom, self.table.values,
              memo, offsets)  # fmt: skip
        return memo

    def _memo_layout(self, t0: int) -> tuple[np.ndarray, np.ndarray]:
        """NaN-filled memo for the states after t0.. picks: one dense block per depth (all pairs of disjoint
        subsets of the sizes the order gives at that depth)."""
        n, sizes = self.space.n, [0]
        for t in range(len(self.turns) + 1):
            a = int((self.turns[:t] == 0).sum())
            b = t - a
            sizes.append(math.comb(n, a) * math.comb(n - a, b) if t >= t0 and t < len(self.turns) else 0)
        offsets = np.cumsum(sizes).astype(np.int64)
        return np.full(int(offsets[-1]), np.nan), offsets


@njit(cache=True)
def solve(m0, m1, bans, t, turns, me, mode, n, k, binom, values, memo, offsets):
    """Value (P(team 0 wins)) of the state (m0, m1) before pick t, by minimax / expectimax to the end."""
    if t == turns.shape[0]:
        return values[pair_rank(m0, m1, n, k, binom)]
    b = 0
    for p in range(n):
        b += (m1 >> p) & 1
    slot = offsets[t] + pair_rank(m0, m1, n, b, binom)
    if not np.isnan(memo[slot]):
        return memo[slot]
    team = turns[t]
    taken = m0 | m1 | bans
    best = -1.0 if team == 0 else 2.0
    total = 0.0
    count = 0
    for p in range(n):
        if (taken >> p) & 1:
            continue
        if team == 0:
            v = solve(m0 | (1 << p), m1, bans, t + 1, turns, me, mode, n, k, binom, values, memo, offsets)
        else:
            v = solve(m0, m1 | (1 << p), bans, t + 1, turns, me, mode, n, k, binom, values, memo, offsets)
        total += v
        count += 1
        if team == 0:
            best = max(best, v)
        else:
            best = min(best, v)
    result = total / count if mode == 1 and team != me else best
    memo[slot] = result
    return result


def state_from_names(picks: str | None, bans: str | None, team_size: int) -> DraftState:
    teams = parse_picks(picks, team_size) if picks else ([], [])
    ban_ids = [hero_id(b) for b in bans.split(",") if b.strip()] if bans else []
    return DraftState(teams, ban_ids)


CACHE_PREFIX = "search_minimax_first"


def standard_order(team_size: int) -> str:
    """The draft order of a real draft for each team size (5v5: 1-2-2-2-2-1, the one the paper used)."""
    return {1: "1-1", 2: "1-2-1", 3: "1-2-2-1", 4: "1-2-2-2-1", 5: "1-2-2-2-2-1"}[team_size]


def store_search_caches(table: DraftTable) -> None:
    """Solve the standard order for either team opening and store the values next to the table (float32: the
    table's own precision, so nothing is rounded); the ``order`` attribute says which order they solve."""
    import zarr

    group = zarr.open_group(str(table.path), mode="r+")
    order = standard_order(table.team_size)
    for first in (0, 1):
        memo = Drafter(table, parse_order(order, table.team_size), first).solve_all()
        name = f"{CACHE_PREFIX}{first}"
        array = group.create_array(name, shape=memo.shape, chunks=(1 << 20,), dtype="float32", overwrite=True)
        array[:] = memo.astype(np.float32)
        array.attrs["order"] = order  # written last: an array without it is not used


def load_search_cache(table: DraftTable, groups: list[int], first: int) -> np.ndarray | None:
    import zarr

    try:
        array = zarr.open_group(str(table.path), mode="r")[f"{CACHE_PREFIX}{first}"]
    except (FileNotFoundError, KeyError, ValueError, TypeError):
        return None
    order = array.attrs.get("order")
    if order is None or parse_order(order, table.team_size) != groups:
        return None
    return array[:].astype(np.float64)
