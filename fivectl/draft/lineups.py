"""The lineup space of a draft table: every pair of disjoint k-hero teams from a pool of n heroes, numbered.

Lineup ``i`` has team 0 = the ``i // M``-th k-subset of the pool and team 1 = the ``i % M``-th k-subset of the
n - k heroes left, with M = C(n - k, k), both in colexicographic order (positions inside the pool / inside what
team 0 left). 1v1 over 17 heroes: 17 x 16 = 272 lineups; 5v5: C(17,5) x C(12,5) = 4,900,896 (paper App. D.2).
Colex ranks are sums of binomials (:func:`subset_rank`), so the search reads any lineup's value without a
lookup table; :meth:`LineupSpace.lineups` turns index ranges back into hero ids, vectorized, for precompute.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from numba import njit


def binomials(n: int) -> np.ndarray:
    """int64 [n + 1, n + 1]: C(i, j) (0 when j > i)."""
    table = np.zeros((n + 1, n + 1), dtype=np.int64)
    for i in range(n + 1):
        for j in range(i + 1):
            table[i, j] = math.comb(i, j)
    return table


def colex_subsets(n: int, k: int) -> np.ndarray:
    """int64 [C(n, k), k]: the k-subsets of range(n) (ascending) in colex order, the order of subset_rank."""
    subsets = sorted(itertools.combinations(range(n), k), key=lambda c: tuple(reversed(c)))
    return np.array(subsets, dtype=np.int64).reshape(len(subsets), k)


@njit(cache=True)
def subset_rank(mask: np.int64, n: int, binom: np.ndarray) -> np.int64:
    """Colex rank of the subset of range(n) whose bits are set in ``mask``: sum over its i-th smallest
    element p of C(p, i + 1)."""
    rank = 0
    i = 0
    for p in range(n):
        if (mask >> p) & 1:
            i += 1
            rank += binom[p, i]
    return rank


@njit(cache=True)
def squeeze_mask(mask: np.int64, removed: np.int64, n: int) -> np.int64:
    """``mask`` re-indexed inside the positions of range(n) not in ``removed`` (what is left after a team)."""
    out = 0
    j = 0
    for p in range(n):
        if (removed >> p) & 1:
            continue
        if (mask >> p) & 1:
            out |= 1 << j
        j += 1
    return out


@njit(cache=True)
def pair_rank(mask0: np.int64, mask1: np.int64, n: int, b1: int, binom: np.ndarray) -> np.int64:
    """Index of (team 0, team 1) among all pairs of disjoint subsets of sizes (|mask0|, b1):
    rank0 * C(n - |mask0|, b1) + rank of team 1 among the heroes team 0 left."""
    a = 0
    for p in range(n):
        a += (mask0 >> p) & 1
    left = n - a
    return subset_rank(mask0, n, binom) * binom[left, b1] + subset_rank(squeeze_mask(mask1, mask0, n), left, binom)


class LineupSpace:
    """All lineups of two teams of ``team_size`` heroes from ``pool`` (hero ids, ascending)."""

    def __init__(self, pool, team_size: int):
        self.pool = np.asarray(sorted(int(h) for h in pool), dtype=np.int64)
        self.n, self.k = len(self.pool), int(team_size)
        self.binom = binomials(self.n)
        self.per_team0 = math.comb(self.n - self.k, self.k)
        self.size = math.comb(self.n, self.k) * self.per_team0
        self._team0 = colex_subsets(self.n, self.k)  # pool positions
        self._team1 = colex_subsets(self.n - self.k, self.k)  # positions among the heroes team 0 left
        left = np.ones((len(self._team0), self.n), dtype=bool)
        left[np.arange(len(self._team0))[:, None], self._team0] = False
        self._left = np.nonzero(left)[1].reshape(len(self._team0), self.n - self.k)

    def positions(self, start: int, stop: int) -> np.ndarray:
        """int64 [stop - start, 2, k]: pool positions of both teams of lineups start..stop-1."""
        index = np.arange(start, stop, dtype=np.int64)
        r0, r1 = np.divmod(index, self.per_team0)
        team0 = self._team0[r0]
        team1 = np.take_along_axis(self._left[r0], self._team1[r1], axis=1)
        return np.stack([team0, team1], axis=1)

    def lineups(self, start: int, stop: int) -> np.ndarray:
        """int32 [stop - start, 2, k]: hero ids of both teams of lineups start..stop-1."""
        return self.pool[self.positions(start, stop)].astype(np.int32)

    def index(self, lineups: np.ndarray) -> np.ndarray:
        """int64 [m]: the lineup number of hero-id lineups [m, 2, k] (inverse of :meth:`lineups`)."""
        lineups = np.asarray(lineups).reshape(-1, 2, self.k)
        where = np.searchsorted(self.pool, lineups)
        bits = (np.int64(1) << where.astype(np.int64)).sum(axis=2)  # [m, 2] masks of pool positions
        return np.array(
            [pair_rank(m0, m1, self.n, self.k, self.binom) for m0, m1 in bits], dtype=np.int64
        )
