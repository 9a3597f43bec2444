"""The team-relative frame: each team sees the map, and gives move/cast offsets, as if it were team 0.

The embedded map is symmetric under the reflection (x, y) -> (M - y, M - x), which swaps the bases and keeps
every lane (``sim/data.py``, ``tests/sim/test_symmetry.py``). A schema with ``frame = "team"`` applies that
reflection to everything team 1 observes and does, so "walk back to my tower" is the same 9x9 offset for both
sides and self-play experience from either side teaches the same moves. In the world frame the policy has to
learn every directional skill twice, once per side, with the two sides' gradients pulling the same offset
logits in opposite directions.

What the reflection changes, for team 1's agents (team 0 is untouched):
- positions ``x, y`` -> ``(M - y, M - x)``; offsets to units ``dx, dy`` and the previous action's
  ``offset_x, offset_y`` -> ``(-dy, -dx)``;
- grids (terrain around the hero): cell (r, c) -> world cell (H-1-c, W-1-r);
- the action's offset cell (cx, cy) on the 9x9 grid <-> (-cy, -cx), in both directions (an involution).

Distances, masks, unit order, targets and every scalar are unchanged by a reflection, so they pass as they are.
"""

from __future__ import annotations

import numpy as np

from fivectl.schema.spec import ObsSchema

FRAMES = ("world", "team")
# Pairs of float fields that the reflection swaps and negates (offsets) or swaps and subtracts from the map
# size (positions). A schema version that adds a directional field lists it here.
OFFSET_PAIRS = (("dx", "dy"), ("offset_x", "offset_y"))
POSITION_PAIRS = (("x", "y"),)


def mirrored_offsets(grid: int) -> np.ndarray:
    """Offset index -> its reflection on a ``grid`` x ``grid`` offset grid (index = (cy + r) * grid + (cx + r),
    the layout of ``core.offset_point``)."""
    r = grid // 2
    index = np.arange(grid * grid)
    cx, cy = index % grid - r, index // grid - r
    return ((-cx + r) * grid + (-cy + r)).astype(np.int64)


class TeamFrame:
    """Applies the reflection to team 1's observations (in place) and maps their action offsets to the world."""

    def __init__(self, schema: ObsSchema, team_size: int, map_size_km: float):
        self.first_agent = team_size  # agents are ordered team 0 then team 1
        self.map_size = np.float32(map_size_km)
        self.offset_map = mirrored_offsets(schema.action.offset_grid)
        self.offset_keys: list[tuple[str, int, int]] = []
        self.position_keys: list[tuple[str, int, int]] = []
        self.grid_keys: list[str] = []
        for group in schema.groups:
            key = f"{group.name}.float"
            columns = group.float_columns()
            for pairs, out in ((OFFSET_PAIRS, self.offset_keys), (POSITION_PAIRS, self.position_keys)):
                for a, b in pairs:
                    if a in columns and b in columns:
                        out.append((key, columns[a].start, columns[b].start))
            if group.kind == "grid":
                self.grid_keys.append(key)

    def observe(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Reflect team 1's rows of ``obs`` (arrays ``[G, A, ...]``) in place; returns ``obs``."""
        k = self.first_agent
        for key, a, b in self.offset_keys:
            arr = obs[key][:, k:]
            va = arr[..., a].copy()
            arr[..., a] = -arr[..., b]
            arr[..., b] = -va
        for key, a, b in self.position_keys:
            arr = obs[key][:, k:]
            va = arr[..., a].copy()
            arr[..., a] = self.map_size - arr[..., b]
            arr[..., b] = self.map_size - va
        for key in self.grid_keys:
            arr = obs[key][:, k:]  # [G, k, H, W, F]
            arr[...] = arr[:, :, ::-1, ::-1].swapaxes(2, 3).copy()
        return obs

    def actions_to_world(self, actions: np.ndarray) -> np.ndarray:
        """Actions ``[G, A, 4]`` with team 1's offsets (column 3) taken from the team frame to the world's."""
        out = np.array(actions, dtype=np.int64, copy=True)
        out[:, self.first_agent :, 3] = self.offset_map[out[:, self.first_agent :, 3]]
        return out

    def offsets_for_team(self, offsets: np.ndarray, team: np.ndarray) -> np.ndarray:
        """World-frame offsets ``[G, ...]`` of agents on ``team[g]`` expressed in that team's frame (scripted
        bots aim in the world frame)."""
        team1 = np.asarray(team) == 1
        out = offsets.copy()
        out[team1] = self.offset_map[offsets[team1]]
        return out
