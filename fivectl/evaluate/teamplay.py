"""Team play, measured in evaluation games of the embedded MOBA (team size 2 or more).

Two figures per game and team, read from the game state as the match plays:

- **grouped kill share**: of the enemy heroes the team killed, the share that died with two or more of the team's
  living heroes within ``NEAR`` of them (the sim's XP range: the heroes that share the kill's experience). Heroes
  that farm alone and trade one for one score low; heroes that gank and fight together score high.
- **lanes covered**: over the game, the mean number of lanes (of 1 or 3) with at least one of the team's living
  heroes on them, sampled every ``every`` steps. A hero is on a lane when it is within ``LANE_WIDTH`` of the lane's
  path and outside both bases; five heroes that push one lane together cover 1, heroes spread to farm all three 3.
- **home share**: of the team's living hero-time (same samples), the share spent within ``BASE_RADIUS`` of its own
  fountain. A team that hides at home from a stronger enemy scores near 1; one that goes out to play, near 0.1.

The tracker is vectorized over game slots: a snapshot before each step, a comparison after it.
"""

from __future__ import annotations

import numpy as np

from fivectl import sim

NEAR = sim.XP_RANGE
"""Distance within which a team's hero counts as part of a kill (1,300: the XP-sharing range)."""
LANE_WIDTH = sim.LANE_WIDTH
"""Distance from a lane's path within which a hero is on that lane (as the sim's lane assignment reward)."""
BASE_RADIUS = sim.BASE_RADIUS
"""Heroes this close to either fountain are in a base, not on a lane."""


class TeamPlayTracker:
    """Per-game team-play tallies of a batch of game slots (game ids are the match queue's global numbers)."""

    def __init__(self, env, total_games: int, every: int = 8):
        self.env = env
        self.heroes = env.agents_per_game
        self.every = every
        self.kills = np.zeros((total_games, 2))
        self.grouped = np.zeros((total_games, 2))
        self.lanes_sum = np.zeros((total_games, 2))
        self.lane_samples = np.zeros((total_games, 2))
        self.home_sum = np.zeros((total_games, 2))  # living heroes in their own base, summed over the samples
        self.alive_sum = np.zeros((total_games, 2))  # living heroes, summed over the samples
        pts = np.asarray(env.layout.lane_pts, dtype=np.float64)  # [lanes, points, 2]
        self.seg_a, self.seg_b = pts[:, :-1], pts[:, 1:]  # [lanes, segments, 2]
        self.fountains = np.asarray(sim.FOUNTAIN_POS, dtype=np.float64)
        self._steps = 0
        self._before: tuple[np.ndarray, ...] | None = None

    # ------------------------------------------------------------------ per step
    def before_step(self, slot_game: np.ndarray) -> None:
        """Snapshot hero positions, life and deaths of every slot (and sample lane occupancy now and then)."""
        s, h = self.env.state, self.heroes
        xy = np.stack([s.x[:, :h], s.y[:, :h]], axis=-1)  # [slots, H, 2]
        alive = s.alive[:, :h].astype(bool)
        team = s.team[:, :h]
        self._before = (xy.copy(), alive.copy(), team.copy(), s.deaths.copy())
        if self._steps % self.every == 0:
            self._sample_lanes(slot_game, xy, alive, team)
        self._steps += 1

    def after_step(self, slot_game: np.ndarray, done: np.ndarray) -> None:
        """Count the heroes that died in this step, and who of the killing team stood near each."""
        xy, alive, team, deaths_before = self._before
        final = getattr(self.env, "final", self.env.state)
        deaths_now = np.where(np.asarray(done, bool)[:, None], final.deaths, self.env.state.deaths)
        died = (deaths_now > deaths_before) & (slot_game >= 0)[:, None]  # [slots, H]
        rows, victims = np.nonzero(died)
        if len(rows) == 0:
            return
        killers = 1 - team[rows, victims]  # the victim's enemy team gets the kill (as the sim counts it)
        offset = xy[rows] - xy[rows, victims][:, None, :]  # [n, H, 2]
        near = (offset**2).sum(-1) <= NEAR * NEAR
        helpers = (near & alive[rows] & (team[rows] == killers[:, None])).sum(axis=1)
        games = slot_game[rows]
        np.add.at(self.kills, (games, killers), 1.0)
        np.add.at(self.grouped, (games, killers), (helpers >= 2).astype(np.float64))

    # ------------------------------------------------------------------ lanes
    def _sample_lanes(self, slot_game, xy, alive, team) -> None:
        on = slot_game >= 0
        if not on.any():
            return
        lane = self._lane_of(xy[on])  # [n, H], -1 off-lane
        lane = np.where(alive[on], lane, -1)
        n_lanes = self.seg_a.shape[0]
        games = slot_game[on]
        for t in (0, 1):
            mine = team[on] == t
            covered = np.zeros(lane.shape[0])
            for li in range(n_lanes):
                covered += ((lane == li) & mine).any(axis=1)
            self.lanes_sum[games, t] += covered
            self.lane_samples[games, t] += 1.0
            living = alive[on] & mine
            at_home = ((xy[on] - self.fountains[t]) ** 2).sum(-1) <= BASE_RADIUS**2
            self.home_sum[games, t] += (living & at_home).sum(axis=1)
            self.alive_sum[games, t] += living.sum(axis=1)

    def _lane_of(self, xy: np.ndarray) -> np.ndarray:
        """int [n, H]: the nearest lane within LANE_WIDTH of each position, -1 when none or inside a base."""
        p = xy[:, :, None, None, :]  # [n, H, 1, 1, 2]
        a, b = self.seg_a[None, None], self.seg_b[None, None]  # [1, 1, lanes, segs, 2]
        ab = b - a
        t = np.clip(((p - a) * ab).sum(-1) / (ab * ab).sum(-1), 0.0, 1.0)
        closest = a + t[..., None] * ab
        dist = np.sqrt(((p - closest) ** 2).sum(-1)).min(axis=-1)  # [n, H, lanes]
        lane = dist.argmin(axis=-1)
        in_base = (((xy[:, :, None, :] - self.fountains) ** 2).sum(-1) <= BASE_RADIUS**2).any(axis=-1)
        return np.where((dist.min(axis=-1) <= LANE_WIDTH) & ~in_base, lane, -1)

    # ------------------------------------------------------------------ results
    def side_figures(self, ids: slice, team_a: np.ndarray) -> dict[str, float | None]:
        """Figures of A and of B over the games ``ids`` (A on team ``team_a[i]`` in game i): the grouped kill
        share averaged over the games where the side killed at least once (None if it never did), the mean
        lanes covered, and the share of living hero-time at home over all the games' samples."""
        games_ix = np.arange(len(team_a))
        out: dict[str, float | None] = {}
        for side, teams in (("a", team_a), ("b", 1 - team_a)):
            kills = self.kills[ids][games_ix, teams]
            grouped = self.grouped[ids][games_ix, teams]
            scored = kills > 0
            out[f"{side}_grouped_kill_share"] = (
                float((grouped[scored] / kills[scored]).mean()) if scored.any() else None
            )
            samples = self.lane_samples[ids][games_ix, teams]
            lanes = self.lanes_sum[ids][games_ix, teams] / np.maximum(samples, 1.0)
            out[f"{side}_lanes_covered"] = float(lanes.mean())
            alive = self.alive_sum[ids][games_ix, teams].sum()
            out[f"{side}_home_share"] = float(self.home_sum[ids][games_ix, teams].sum() / max(alive, 1.0))
        return out


def tracks_team_play(env) -> bool:
    """Whether the games are ones the tracker can read: the embedded MOBA with two or more heroes per team."""
    return env.team_size > 1 and hasattr(env, "state") and hasattr(env, "layout")
