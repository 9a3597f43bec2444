"""``[anneal]``: a change of the game rolled into training from 0% to 100% of games (paper B, ``fivectl anneal``).

``fivectl anneal start`` fills ``change`` (and the flags it was given) into the run's recipe, ``fivectl anneal
stop`` clears it and, with ``--keep``, adds the change to ``kept``. The ramp's position, speed and guard history
live in each checkpoint, not here.
"""

from __future__ import annotations

from dataclasses import dataclass

from fivectl.config.fields import param


@dataclass
class AnnealConfig:
    change: str = param(
        "", "The game change being annealed in (a name from `fivectl anneal list`); empty = none."
    )
    over_samples: float = param(
        5e6,
        "Samples over which the fraction of games with the change rises from 0 to 1 (at full speed).",
        gt=0,
    )
    guard: float = param(
        2.0,
        "TrueSkill drop that reverts: when the latest version's rating under the new rules falls more than this "
        "below the start version's rating under the new rules, the fraction goes back to its last good value.",
        gt=0,
    )
    slowdown: float = param(0.5, "The ramp's speed is multiplied by this at each revert.", gt=0, le=1)
    guard_every: int = param(
        0,
        "Versions between the guard's evaluations; 0 = eval.every_versions when set, else train.milestone_every "
        "(the versions the run keeps for good), else every 10th checkpoint (10 x train.checkpoint_every).",
        ge=0,
    )
    guard_games: int = param(
        60,
        "Games per guard evaluation of a version under the change; 0 = eval.games. With 20 games a rating's sigma "
        "is about 2, the size of a typical guard: a noisy guard reverts changes that do no harm.",
        ge=0,
    )
    baseline_games: int = param(
        0,
        "Games the anneal's start version plays under the change at `fivectl anneal start` (the guard's "
        "baseline, then pinned as a reference); 0 = twice guard_games.",
        ge=0,
    )
    kept: list[str] = param(
        factory=list,
        doc="Changes that became part of the run's game (`fivectl anneal stop --keep`): every game runs them.",
    )
