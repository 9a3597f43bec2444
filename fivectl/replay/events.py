"""What happened in a recorded game: hero kills and buildings destroyed (from the recorded frames), and the
per-hero summary of ``replay stats``.

Events are found with array operations over all rows at once (a unit alive at row t-1 and dead at row t died at
step t); only the events themselves (a few dozen per game) are visited in Python. A hero *assists* a kill, or
*takes part* in destroying a building, when it is alive within ``data.XP_RANGE`` of the unit as it dies: the radius
in which the game shares the experience of a kill (the same rule as the objective labels, ``sim/objectives.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from fivectl.sim import (
    UT_ANCIENT,
    UT_BARRACKS,
    UT_BOSS,
    UT_HERO,
    UT_MELEE,
    UT_NEUTRAL,
    UT_RANGED,
    UT_TOWER,
    XP_RANGE,
)
from fivectl.store.replay import Replay

TEAM_NAMES = ("radiant", "dire")
BUILDING_NAMES = {UT_TOWER: "tower", UT_BARRACKS: "barracks", UT_ANCIENT: "ancient"}
UNIT_NAMES = {
    UT_HERO: "hero",
    UT_MELEE: "melee creep",
    UT_RANGED: "ranged creep",
    UT_TOWER: "tower",
    UT_BARRACKS: "barracks",
    UT_ANCIENT: "ancient",
    UT_NEUTRAL: "neutral creep",
    UT_BOSS: "boss",
}
TARGET_KINDS = {
    "heroes": (UT_HERO,),
    "creeps": (UT_MELEE, UT_RANGED),
    "buildings": (UT_TOWER, UT_BARRACKS, UT_ANCIENT),
    "neutrals": (UT_NEUTRAL, UT_BOSS),
}
"""What a hero's target can be, for ``target_shares``: whether a team pushes shows in its share on buildings."""


@dataclass
class Event:
    row: int
    seconds: float
    kind: str  # "kill" or "building"
    team: int  # the team that lost the unit
    unit: int
    text: str
    killer: int = -1  # hero credited with the kill (-1: creeps, towers or neutrals)
    helpers: list[int] = field(default_factory=list)  # heroes that assisted / took part

    def to_dict(self) -> dict:
        return asdict(self)


def hero_label(replay: Replay, h: int) -> str:
    return f"{replay.header['lineup'][h]} ({TEAM_NAMES[hero_team(replay, h)]})"


def hero_team(replay: Replay, h: int) -> int:
    return 0 if h < int(replay.header["team_size"]) else 1


def building_label(replay: Replay, row: int, u: int) -> str:
    a = replay.arrays
    kind = BUILDING_NAMES.get(int(a["utype"][row, u]), "building")
    team = TEAM_NAMES[int(a["team"][row, u])]
    return f"{team} {kind}"


def find_events(replay: Replay) -> list[Event]:
    """Hero deaths and destroyed buildings, in game order."""
    a = replay.arrays
    heroes = int(replay.header["heroes"])
    alive = a["alive"].astype(bool)
    died = alive[:-1] & ~alive[1:]  # [rows - 1, U]: died during step t (seen at row t + 1)
    utype = a["utype"][1:]
    building = np.isin(utype, list(BUILDING_NAMES))
    is_hero = np.zeros(died.shape[1], dtype=bool)
    is_hero[:heroes] = True
    seconds = replay.seconds()
    kills_gained = np.diff(a["kills"].astype(np.int64), axis=0)  # [rows - 1, H]
    events = []
    for step, u in zip(*np.nonzero(died & (is_hero | building)), strict=True):
        row = int(step) + 1
        near = _heroes_near(replay, int(step), int(u))
        team = int(a["team"][row, u])
        if u < heroes:
            scorers = np.flatnonzero(kills_gained[step] > 0)
            scorers = [int(h) for h in scorers if hero_team(replay, int(h)) != team]
            killer = scorers[0] if scorers else -1
            helpers = [h for h in near if h != killer]
            by = hero_label(replay, killer) if killer >= 0 else "creeps"
            text = f"{hero_label(replay, int(u))} killed by {by}"
            events.append(Event(row, float(seconds[row]), "kill", team, int(u), text, killer, helpers))
        else:
            text = f"{building_label(replay, row, int(u))} destroyed"
            events.append(Event(row, float(seconds[row]), "building", team, int(u), text, -1, near))
    return events


def _heroes_near(replay: Replay, row: int, u: int) -> list[int]:
    """Heroes of the other team alive within XP_RANGE of unit ``u`` at ``row`` (just before it died)."""
    a = replay.arrays
    heroes = int(replay.header["heroes"])
    team = int(a["team"][row, u])
    dx = a["x"][row, :heroes] - a["x"][row, u]
    dy = a["y"][row, :heroes] - a["y"][row, u]
    close = (dx * dx + dy * dy <= XP_RANGE**2) & (a["alive"][row, :heroes] == 1)
    return [h for h in np.flatnonzero(close).tolist() if hero_team(replay, h) != team]


def hero_stats(replay: Replay, events: list[Event] | None = None) -> dict:
    """Per-hero KDA, last hits, denies, gold, net worth, level and buildings taken part in; per-team totals and
    target shares."""
    events = find_events(replay) if events is None else events
    a = replay.arrays
    heroes = int(replay.header["heroes"])
    last = replay.rows - 1
    assists = np.zeros(heroes, dtype=np.int64)
    buildings = np.zeros(heroes, dtype=np.int64)
    for e in events:
        target = assists if e.kind == "kill" else buildings
        for h in e.helpers:
            target[h] += 1
    rows = []
    for h in range(heroes):
        rows.append(
            {
                "hero": replay.header["lineup"][h],
                "team": TEAM_NAMES[hero_team(replay, h)],
                "kills": int(a["kills"][last, h]),
                "deaths": int(a["deaths"][last, h]),
                "assists": int(assists[h]),
                "last_hits": int(a["last_hits"][last, h]),
                "denies": int(a["denies"][last, h]),
                "gold": round(float(a["gold"][last, h]), 1),
                "networth": round(float(a["networth"][last, h]), 1),
                "level": int(a["level"][last, h]),
                "buildings": int(buildings[h]),
            }
        )
    destroyed = [0, 0]
    for e in events:
        if e.kind == "building":
            destroyed[1 - e.team] += 1
    winner = int(replay.result["winner"])
    shares = target_shares(replay)
    return {
        "file": str(replay.path),
        "agents": replay.header.get("agents", []),
        "winner": TEAM_NAMES[winner] if winner in (0, 1) else "draw",
        "steps": replay.steps,
        "seconds": round(float(replay.result["seconds"]), 2),
        "heroes": rows,
        "teams": [
            {
                "team": TEAM_NAMES[t],
                "kills": int(sum(r["kills"] for r in rows if r["team"] == TEAM_NAMES[t])),
                "buildings_destroyed": destroyed[t],
                "targets": shares[t],
            }
            for t in (0, 1)
        ],
    }


def target_shares(replay: Replay) -> list[dict[str, float]]:
    """Per team: the share of its heroes' living frames spent with a target of each kind in TARGET_KINDS (the unit
    a hero attacks, or walks to attack); the rest of the frames had no target."""
    a = replay.arrays
    heroes = int(replay.header["heroes"])
    alive = a["alive"][:, :heroes] == 1
    target = a["target"][:, :heroes].astype(np.int64)
    rows = np.arange(replay.rows)[:, None]
    kind = np.where(alive & (target >= 0), a["utype"][rows, np.maximum(target, 0)], -1)
    shares = []
    for t in (0, 1):
        on_team = np.array([hero_team(replay, h) == t for h in range(heroes)])
        frames = max(int(alive[:, on_team].sum()), 1)
        team_kind = kind[:, on_team]
        shares.append(
            {
                name: round(float(np.isin(team_kind, types).sum()) / frames, 4)
                for name, types in TARGET_KINDS.items()
            }
        )
    return shares


def team_win_prob(replay: Replay) -> np.ndarray:
    """[rows, 2]: each team's mean predicted probability that it wins (NaN for a team without a policy)."""
    wp = replay.arrays["win_prob"]
    k = int(replay.header["team_size"])
    with np.errstate(invalid="ignore"):
        out = np.stack([_nanmean(wp[:, :k]), _nanmean(wp[:, k:])], axis=1)
    return out


def _nanmean(x: np.ndarray) -> np.ndarray:
    counts = (~np.isnan(x)).sum(axis=1)
    sums = np.nansum(x, axis=1)
    return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
