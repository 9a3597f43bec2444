"""The recipe's schedules evaluated at a point of training (paper C, Table 2: learning rate, entropy
coefficient, team spirit and GAE horizon change over the run; Rerun anneals them in steps). The lane penalty
(paper O.2, an aid of the early game) and the share of games against bots may change too.

A :class:`fivectl.config.fields.Schedule` counts either ``samples`` (agent-steps consumed by the learner) or
``versions`` (published parameter versions); :class:`Progress` carries both so each schedule reads its own unit.
"""

from __future__ import annotations

from dataclasses import dataclass

from fivectl.config.fields import Schedule
from fivectl.config.recipe import Recipe
from fivectl.errors import BadInput
from fivectl.rl.gae import gamma_from_horizon


@dataclass(frozen=True)
class Progress:
    samples: int = 0
    versions: int = 0


@dataclass(frozen=True)
class Hyperparameters:
    learning_rate: float
    entropy_coef: float
    team_spirit: float
    horizon_s: float
    gamma: float
    bot_fraction: float = 0.0
    off_lane: float = 0.0
    value_only: bool = False  # train.value_warmup_samples: only the value head trains


def schedule_value(schedule: Schedule, progress: Progress) -> float:
    if schedule.unit == "samples":
        return schedule(progress.samples)
    if schedule.unit == "versions":
        return schedule(progress.versions)
    raise BadInput(f"unknown schedule unit {schedule.unit!r} (expected 'samples' or 'versions')")


def step_seconds(recipe: Recipe) -> float:
    """Game seconds per decision: frameskip / fps (paper: 4 / 30 = 0.133 s), times ``model.decide_every``."""
    return recipe.model.decide_every * recipe.game.frameskip / recipe.game.fps


def hyperparameters_at(recipe: Recipe, progress: Progress, warmup_end_version: int = 0) -> Hyperparameters:
    """Every scheduled value at ``progress``. The learning rate is 0 while ``progress.versions`` <
    ``warmup_end_version`` (paper B, smooth restart after surgery: the trainer passes surgery version +
    ``train.warmup_versions``)."""
    train = recipe.train
    learning_rate = schedule_value(train.learning_rate, progress)
    if progress.versions < warmup_end_version:
        learning_rate = 0.0
    horizon_s = schedule_value(train.horizon_s, progress)
    return Hyperparameters(
        learning_rate=learning_rate,
        entropy_coef=schedule_value(train.entropy_coef, progress),
        team_spirit=schedule_value(recipe.reward.team_spirit, progress),
        horizon_s=horizon_s,
        gamma=gamma_from_horizon(horizon_s, step_seconds(recipe)),
        bot_fraction=schedule_value(recipe.selfplay.bot_fraction, progress),
        off_lane=schedule_value(recipe.reward.off_lane, progress),
        value_only=progress.samples < train.value_warmup_samples,
    )
