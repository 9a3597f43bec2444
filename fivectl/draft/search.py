"""Pick advice from a draft table: minimax (or expectimax against a random drafter) over the remaining picks.

Paper App. D.2 drafts "the best hero available on each turn" with dynamic programming over the precomputed win
probabilities. A draft state is the pair of teams picked so far (bitmasks over pool positions); the draft order
(e.g. 1-2-2-2-2-1: team A picks 1, team B 2, ...) fixes whose turn it is. Team 0 maximizes P(team 0 wins),
team 1 minimizes it; in ``expectimax`` mode the side not being advised picks uniformly at random. Values of
states are memoized in one dense array per depth, indexed by the colex rank of the state (as the table's
lineups are), so every state is solved once; the search is compiled (numba), and a state's children's ranks
are updated incrementally (:func:`child_states`), not recomputed.

Solving a whole 5v5 draft from the first pick visits about 5.8 million states. ``precompute`` stores, with a
finished table, the solved minimax values of every state of the standard order for either team opening
(:func:`store_search_caches`); a query without bans in that order only reads them. Any other query early in the
draft (bans, another order, expectimax) solves the whole tree of its ban set bottom-up once (:func:`fill_memo`,
much faster than top-down), and a :class:`Drafter` keeps that memo, so the later queries of the
same draft read it; later in a draft the top-down search from the state is faster than the whole tree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from fivectl.draft.lineups import pair_rank
from fivectl.draft.table import DraftTable
from fivectl.errors import BadInput
from fivectl.sim import HERO_NAMES, hero_id, parse_team

MINIMAX, EXPECTIMAX = 0, 1
FILL_PICKS = 2  # queries before this many picks solve the whole tree bottom-up (fill_memo)
MEMOS_KEPT = 4  # searched memos kept per Drafter (ban sets / advised sides), about 46 MB each in 5v5
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
        self._memos: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._offsets = self._depth_offsets(0)
        n, depth = self.space.n, len(self.turns)
        self._ints, self._floats = np.empty((2, depth, n), dtype=np.int64), np.empty((depth, n))  # solve's scratch
        self._filled: dict[int, bool] = {}  # id(memo) -> solved bottom-up for every state

    def check(self, state: DraftState) -> None:
        seen = state.teams[0] + state.teams[1] + state.bans
        dup = sorted({h for h in seen if seen.count(h) > 1})
        if dup:
            raise BadInput(f"picks/bans: {', '.join(HERO_NAMES[h] for h in dup)} chosen twice")
        outside = [h for h in seen if h not in self.pos]
        if outside:
            raise BadInput(f"{', '.join(HERO_NAMES[h] for h in outside)} not in the table's hero pool")
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
        return self._solve(m0, m1, bans, t, me)

    def advise(self, state: DraftState, top: int = 5) -> Advice:
        self.check(state)
        t = len(state.teams[0]) + len(state.teams[1])
        if t >= len(self.turns):
            raise BadInput("the draft is complete: no pick left to advise")
        team = int(self.turns[t])
        m0, m1, bans = self._masks(state)
        n = self.space.n
        heroes, values = [], []
        for p in range(n):
            if ((m0 | m1 | bans) >> p) & 1:
                continue
            c0, c1 = (m0 | 1 << p, m1) if team == 0 else (m0, m1 | 1 << p)
            v = self._solve(c0, c1, bans, t + 1, team)
            heroes.append(int(self.space.pool[p]))
            values.append(float(v))
        mine = np.array(values) if team == 0 else 1.0 - np.array(values)
        order = np.argsort(-mine, kind="stable")
        best = int(order[0])
        return Advice(
            team=team,
            pick=HERO_NAMES[heroes[best]],
            value=values[best],
            win_prob=float(mine[best]),
            alternatives=[(HERO_NAMES[heroes[i]], float(mine[i])) for i in order[:top]],
            picks_made=t,
        )

    def _solve(self, m0: int, m1: int, bans: int, t: int, me: int) -> float:
        """Value of the state (m0, m1) before pick t. Early in a draft (the first FILL_PICKS picks) the search
        would visit nearly every state anyway: the memo of this ban set is filled bottom-up once (fill_memo, much
        faster than chasing the tree) and the top-down search only reads it."""
        n, binom = self.space.n, self.space.binom
        memo, offsets = self._memo(bans, me)
        if memo is not self.cache and t <= FILL_PICKS and not self._filled.get(id(memo)):
            fill_memo(0, bans, self.turns, me, self.mode, n, binom, self.table.values, memo, offsets)
            self._filled[id(memo)] = True
        idx = pair_rank(np.int64(m0), np.int64(m1), n, bin(m1).count("1"), binom)
        return float(
            solve(np.int64(m0), np.int64(m1), idx, np.int64(bans), t, self.turns, me, self.mode, n, binom,
                  self.table.values, memo, offsets, self._ints, self._floats)
        )  # fmt: skip

    def _memo(self, bans: int, me: int) -> tuple[np.ndarray, np.ndarray]:
        """The stored solution when it applies (minimax, no bans), else the memo of this ban set (and advised side
        in expectimax), kept for the next queries: in a draft with bans or another order only the first query
        searches, the later ones reuse what it solved."""
        if self.cache is not None and bans == 0:
            return self.cache, self._offsets
        key = (bans, me if self.mode == EXPECTIMAX else -1)
        if key not in self._memos:
            if len(self._memos) >= MEMOS_KEPT:
                dropped = self._memos.pop(next(iter(self._memos)))
                self._filled.pop(id(dropped[0]), None)
            self._memos[key] = self._memo_layout(0)
        return self._memos[key]

    def solve_all(self) -> np.ndarray:
        """Memo of every state from the first pick on, solved (minimax, no bans)."""
        memo, offsets = self._memo_layout(0)
        fill_memo(0, 0, self.turns, 0, MINIMAX, self.space.n, self.space.binom, self.table.values, memo, offsets)
        return memo

    def _memo_layout(self, t0: int) -> tuple[np.ndarray, np.ndarray]:
        """NaN-filled memo for the states after t0.. picks: one dense block per depth (all pairs of disjoint
        subsets of the sizes the order gives at that depth)."""
        offsets = self._depth_offsets(t0)
        return np.full(int(offsets[-1]), np.nan, dtype=np.float32), offsets

    def _depth_offsets(self, t0: int) -> np.ndarray:
        n, sizes = self.space.n, [0]
        for t in range(len(self.turns) + 1):
            a = int((self.turns[:t] == 0).sum())
            b = t - a
            sizes.append(math.comb(n, a) * math.comb(n - a, b) if t >= t0 and t < len(self.turns) else 0)
        return np.cumsum(sizes).astype(np.int64)


@njit(cache=True)
def child_states(m0, m1, bans, team, n, binom, out_idx, out_bit):
    """The states after ``team`` picks each free hero p of the state (m0, m1): their ``pair_rank`` in ``out_idx``
    and 1 << p in ``out_bit``; returns how many.

    The ranks are updated incrementally in one pass over the pool instead of recomputed per child (O(n) per
    state, not per child): in a colex rank sum_i C(e_i, i) (i = 1-based index), adding p shifts the index of the
    elements above p by one, and when team 0 takes p, team 1's positions among the heroes team 0 left drop by
    one above p.
    """
    a = 0
    b = 0
    for p in range(n):
        a += (m0 >> p) & 1
        b += (m1 >> p) & 1
    # sums over the elements above the current p; j0 / j1 count the elements of m0 / m1 below it
    above0 = 0  # team 0's rank terms with the index shifted by one (team 0 picks)
    above1 = 0  # team 1's squeezed terms: shifted index (team 1 picks) or shifted position (team 0 picks)
    j0 = 0
    j1 = 0
    rank0 = 0
    for p in range(n):
        if (m0 >> p) & 1:
            j0 += 1
            rank0 += binom[p, j0]
            above0 += binom[p, j0 + 1]
        elif (m1 >> p) & 1:
            j1 += 1
            q = p - j0
            if team == 0:
                above1 += binom[q - 1, j1] if q >= 1 else 0
            else:
                above1 += binom[q, j1 + 1]
    below0 = 0
    below1 = 0
    j0 = 0
    j1 = 0
    stride = binom[n - a - 1, b] if team == 0 else binom[n - a, b + 1]
    count = 0
    for p in range(n):
        bit = np.int64(1) << p
        if m0 & bit:
            j0 += 1
            below0 += binom[p, j0]
            above0 -= binom[p, j0 + 1]
            continue
        if m1 & bit:
            j1 += 1
            q = p - j0
            below1 += binom[q, j1]
            if team == 0:
                above1 -= binom[q - 1, j1] if q >= 1 else 0
            else:
                above1 -= binom[q, j1 + 1]
            continue
        if bans & bit:
            continue
        if team == 0:
            out_idx[count] = (below0 + binom[p, j0 + 1] + above0) * stride + below1 + above1
        else:
            out_idx[count] = rank0 * stride + below1 + binom[p - j0, j1 + 1] + above1
        out_bit[count] = bit
        count += 1
    return count


@njit(cache=True)
def combine(children, count, team, me, mode):
    """Team 0 maximizes, team 1 minimizes; in expectimax the side not advised (``me``) picks at random."""
    if mode == EXPECTIMAX and team != me:
        return children[:count].sum() / count
    return children[:count].max() if team == 0 else children[:count].min()


@njit(cache=True)
def solve(m0, m1, idx, bans, t, turns, me, mode, n, binom, values, memo, offsets, ints, floats):
    """Value (P(team 0 wins)) of the state (m0, m1) before pick t (``idx``: its ``pair_rank``, the table's lineup
    number at the end) by minimax / expectimax to the end, memoized. Scratch rows per depth: ``ints`` int64
    [2, depth, n], ``floats`` [depth, n]."""
    if t == turns.shape[0]:
        return values[idx]
    slot = offsets[t] + idx
    if not np.isnan(memo[slot]):
        return memo[slot]
    team = turns[t]
    child_idx = ints[0, t]
    child_bit = ints[1, t]
    count = child_states(m0, m1, bans, team, n, binom, child_idx, child_bit)
    children = floats[t]
    for c in range(count):
        c0 = m0 | child_bit[c] if team == 0 else m0
        c1 = m1 if team == 0 else m1 | child_bit[c]
        children[c] = solve(c0, c1, child_idx[c], bans, t + 1, turns, me, mode, n, binom, values, memo, offsets,
                            ints, floats)  # fmt: skip
    result = combine(children, count, team, me, mode)
    memo[slot] = result
    return result


@njit(cache=True)
def next_subset(x):
    """The next integer with as many bits set (Gosper): k-subsets in increasing masks are in colex order."""
    c = x & -x
    r = x + c
    return (((r ^ x) >> 2) // c) | r


@njit(cache=True)
def fill_memo(t_from, bans, turns, me, mode, n, binom, values, memo, offsets):
    """Solve every state of depths t_from.. bottom-up, deepest first, each from its children's stored values.

    Faster than the same tree top-down: the states of a depth are independent and
    visited in rank order, so their reads of the next depth overlap instead of following one another through
    the recursion. States with a banned hero are skipped (no search reaches them)."""
    depth = turns.shape[0]
    child_idx = np.empty(n, dtype=np.int64)
    child_bit = np.empty(n, dtype=np.int64)
    children = np.empty(n)
    for t in range(depth - 1, t_from - 1, -1):
        a = 0
        for i in range(t):
            a += 1 - turns[i]
        b = t - a
        team = turns[t]
        n1 = binom[n - a, b]
        m0 = (np.int64(1) << a) - 1
        for r0 in range(binom[n, a]):
            if r0:
                m0 = next_subset(m0)
            if m0 & bans:
                continue
            squeezed = (np.int64(1) << b) - 1
            for r1 in range(n1):
                if r1:
                    squeezed = next_subset(squeezed)
                m1 = np.int64(0)  # the squeezed subset placed on the heroes team 0 left
                j = 0
                for p in range(n):
                    if not (m0 >> p) & 1:
                        if (squeezed >> j) & 1:
                            m1 |= np.int64(1) << p
                        j += 1
                if m1 & bans:
                    continue
                count = child_states(m0, m1, bans, team, n, binom, child_idx, child_bit)
                for c in range(count):
                    if t + 1 == depth:
                        children[c] = values[child_idx[c]]
                    else:
                        children[c] = memo[offsets[t + 1] + child_idx[c]]
                memo[offsets[t] + r0 * n1 + r1] = combine(children, count, team, me, mode)


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
    return array[:]
