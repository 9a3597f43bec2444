"""The learner's side of the parameter store: when a new version goes out, and what goes with it.

A version is published every ``train.publish_every`` gradient steps, with the schedule values at the run's
progress (team spirit, the share of games against scripted bots), the opponent pool (versions and sampling
probabilities) and the fraction of new games that run a change being annealed in. Under the staleness 'wait'
policy a new version first waits until no worker still plays one more than ``train.max_staleness`` behind it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch

from fivectl.config import Recipe
from fivectl.rl.schedules import Hyperparameters, Progress, hyperparameters_at
from fivectl.runtime.fragment_source import FragmentSource
from fivectl.runtime.game_change_hook import GameChangeHook
from fivectl.runtime.params import ParameterStore
from fivectl.runtime.run_state import LearnerState

STALENESS_WAIT_S = 60.0  # the longest a version waits for the workers to catch up ('wait' policy)


class Publisher:
    """Publishes the learner's versions to its workers through ``params``."""

    def __init__(
        self,
        recipe: Recipe,
        state: LearnerState,
        anneal: GameChangeHook,
        params: ParameterStore,
        stopping: Callable[[], bool],
    ):
        self.recipe = recipe
        self.train_cfg = recipe.train
        self.state = state  # its counters are read anew each time: a restore replaces them
        self.anneal = anneal
        self.params = params
        self.stopping = stopping  # a stop was requested: no more waiting for workers

    @classmethod
    def open(
        cls,
        recipe: Recipe,
        state: LearnerState,
        anneal: GameChangeHook,
        device: torch.device,
        stopping: Callable[[], bool],
    ) -> Publisher:
        """A parameter store shaped like the model, holding its current version; in shared memory only for
        local worker processes."""
        model = state.model
        shared = recipe.train.workers > 0 and recipe.train.backend == "local"
        params = ParameterStore.for_model(model.cpu() if device.type != "cpu" else model, shared)
        model.to(device)
        publisher = cls(recipe, state, anneal, params, stopping)
        publisher.publish()
        return publisher

    def hyperparameters(self) -> Hyperparameters:
        counters = self.state.counters
        progress = Progress(samples=counters.samples, versions=counters.version)
        return hyperparameters_at(self.recipe, progress, counters.warmup_end_version)

    def publish(self) -> None:
        hp = self.hyperparameters()
        pool = self.state.pool
        self.params.publish(
            self.state.model,
            self.state.counters.version,
            pool=(np.array(pool.versions, dtype=np.int64), pool.probabilities()),
            team_spirit=hp.team_spirit,
            off_lane=hp.off_lane,
            bot_fraction=hp.bot_fraction,
            change_fraction=self.anneal.fraction(),
            samples=float(self.state.counters.samples),
        )

    def after_steps(self, steps: int, source: FragmentSource) -> None:
        """``steps`` gradient steps were taken: publish the next version once ``train.publish_every`` are."""
        counters = self.state.counters
        counters.steps_since_publish += steps
        if counters.steps_since_publish >= self.train_cfg.publish_every:
            self.wait_for_staleness_bound(source)
            counters.version += 1
            counters.steps_since_publish = 0
            self.publish()

    def wait_for_staleness_bound(self, source: FragmentSource) -> None:
        """'wait' policy: publish a new version only when no worker still plays one older than the bound."""
        if self.train_cfg.staleness_policy != "wait":
            return
        deadline = time.monotonic() + STALENESS_WAIT_S
        while time.monotonic() < deadline and not self.stopping():
            oldest = source.oldest_version_in_flight()
            if oldest is None or self.state.counters.version + 1 - oldest <= self.train_cfg.max_staleness:
                return
            time.sleep(0.005)

    def close(self) -> None:
        self.params.close(unlink=True)
