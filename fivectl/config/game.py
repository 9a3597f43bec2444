"""``[game]``: the embedded MOBA (``fivectl.sim``): team size, lanes, frame rate, fog and randomization."""

from __future__ import annotations

from dataclasses import dataclass

from fivectl.config.fields import param


@dataclass
class GameConfig:
    team_size: int = param(1, "Heroes per team: 1 (like Honor of Kings 1v1) up to 5 (like Dota).", ge=1, le=5)
    lanes: int = param(1, "Number of lanes: 1 or 3.", choices=(1, 3))
    time_limit_s: float = param(600.0, "Game time limit in game seconds.", gt=0)
    time_limit_result: str = param(
        "tiebreak",
        "A game at the time limit: 'tiebreak' (more buildings destroyed, then enemy building HP taken, then kills, "
        "then net worth wins) or 'draw'.",
        choices=("tiebreak", "draw"),
    )
    fps: int = param(30, "Game frames per second (paper: 30).", ge=1)
    frameskip: int = param(4, "Frames per decision (paper: 4, i.e. 7.5 decisions/s).", ge=1)
    hero_pool: list[str] = param(
        factory=list, doc="Hero names the lineups are drawn from; empty means the whole pool of 17."
    )
    fog_of_war: bool = param(True, "Each team observes only what its units see.")
    randomize_initial_state: bool = param(True, "Perturb starting HP, mana, gold and positions (paper O.2).")
    randomize_lanes: bool = param(True, "Random lane assignment of heroes (paper O.2).")
    randomize_boss_health: bool = param(True, "Random boss health (paper O.2).")
    randomize_lineup: bool = param(True, "Random heroes each game from the pool (paper O.2).")
    randomize_items: bool = param(True, "Random scripted item builds (paper O.2).")

    def validate(self) -> list[str]:
        errors = []
        pool = len(self.hero_pool) if self.hero_pool else 17
        if 2 * self.team_size > pool:
            errors.append(
                f"game.team_size: {self.team_size} per team needs {2 * self.team_size} heroes, the pool has {pool}"
            )
        return errors
