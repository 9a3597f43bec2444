"""The map gives neither team an edge: its layout and the creep waves are mirror images under the reflection
(x, y) -> (MAP_SIZE - y, MAP_SIZE - x), which swaps the teams and keeps each lane."""

from __future__ import annotations

import numpy as np
import pytest

from fivectl.sim import data as D
from fivectl.sim.state import build_layout
from tests.sim.conftest import make_env


def mirror(x, y):
    return D.MAP_SIZE - np.asarray(y), D.MAP_SIZE - np.asarray(x)


def test_walkable_terrain_is_mirror_symmetric():
    walk = D.walkable_grid()
    # cell (i, j) -> (N-1-j, N-1-i): the reflection on the cell grid
    assert (walk == walk[::-1, ::-1].T).all()
    assert walk.min() == 0  # the blocks are there


@pytest.mark.parametrize("lanes", [1, 3])
def test_buildings_come_in_mirror_pairs(lanes):
    L = build_layout(1, lanes)
    team0 = L.b_team == 0
    mx, my = mirror(L.b_x[team0], L.b_y[team0])
    for x, y, ut, tier in zip(mx, my, L.b_utype[team0], L.b_tier[team0], strict=True):
        twin = (L.b_team == 1) & (np.hypot(L.b_x - x, L.b_y - y) < 1e-6)
        assert twin.sum() == 1, f"no team-1 twin for the team-0 building at {mirror(x, y)}"
        assert L.b_utype[twin][0] == ut and L.b_tier[twin][0] == tier


@pytest.mark.parametrize("lanes", [1, 3])
def test_creep_waves_are_mirror_images(schema, lanes):
    """Both teams spawn the same formation (melee in front, the ranged creep behind) facing each other."""
    env = make_env(schema, lanes=lanes, team_size=1 if lanes == 1 else 5)
    s = env.state
    creeps = np.flatnonzero(s.alive[0] & (s.utype[0] >= D.UT_MELEE) & (s.utype[0] <= D.UT_RANGED))
    t0 = creeps[s.team[0, creeps] == 0]
    t1 = creeps[s.team[0, creeps] == 1]
    assert len(t0) == len(t1) == lanes * (D.WAVE_MELEE + D.WAVE_RANGED)
    mx, my = mirror(s.x[0, t0], s.y[0, t0])
    for x, y, ut, lane in zip(mx, my, s.utype[0, t0], s.lane[0, t0], strict=True):
        d = np.hypot(s.x[0, t1] - x, s.y[0, t1] - y)
        k = int(np.argmin(d))
        assert d[k] < 1e-6 and s.utype[0, t1[k]] == ut and s.lane[0, t1[k]] == lane
    # the ranged creep walks behind the melee ones (farther from the enemy ancient)
    for team, ids in ((0, t0), (1, t1)):
        enemy = D.ANCIENT_POS[1 - team]
        to_enemy = np.hypot(s.x[0, ids] - enemy[0], s.y[0, ids] - enemy[1])
        for lane in range(lanes):
            in_lane = s.lane[0, ids] == lane
            ranged = in_lane & (s.utype[0, ids] == D.UT_RANGED)
            melee = in_lane & (s.utype[0, ids] == D.UT_MELEE)
            assert to_enemy[ranged].min() > to_enemy[melee].max()


def test_heroes_start_at_mirror_points(schema):
    env = make_env(schema, lanes=3, team_size=5)
    s = env.state
    mx, my = mirror(s.x[0, :5], s.y[0, :5])
    np.testing.assert_allclose(np.stack([mx, my]), np.stack([s.x[0, 5:10], s.y[0, 5:10]]), atol=1e-6)
