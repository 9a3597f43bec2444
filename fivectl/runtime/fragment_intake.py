"""An iteration's fragments, taken from the fragment source: staleness, copies, saved rollouts.

A fragment's staleness is how many versions the policy that played it is behind the learner. Under the 'drop'
policy a fragment more than ``train.max_staleness`` behind is released unread; the others are copied out of their
slot, which goes back to its worker at once, and every ``train.rollout_save_every``-th is written to the run's
rollout files. The counters keep what came in, what was dropped and what was kept.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fivectl.config import Recipe
from fivectl.config.train import TrainConfig
from fivectl.runtime.buffers import copy_fragment
from fivectl.runtime.fragment_source import FragmentSource
from fivectl.runtime.learner_batch import per_step_arrays
from fivectl.runtime.run_state import LearnerState
from fivectl.store.rollouts import RolloutWriter


@dataclass
class Intake:
    fragments: list[tuple[int, dict[str, np.ndarray]]]  # (worker, fragment copied out of its slot)
    staleness: list[int]  # versions behind the learner, per fragment
    seconds_copy: float  # spent copying fragments out of their slots

    @property
    def arrays(self) -> list[dict[str, np.ndarray]]:
        return [fragment for _, fragment in self.fragments]


def fragments_per_iteration(train_cfg: TrainConfig, team_size: int) -> int:
    """Enough fragments for ``train.minibatches`` minibatches of ``train.batch_windows`` BPTT windows each."""
    agents_per_worker = train_cfg.games_per_worker * 2 * team_size
    windows_per_fragment = agents_per_worker * (train_cfg.fragment_length // train_cfg.bptt)
    # batch_windows is per learner: with several, the iteration's batch grows with them (paper: per GPU)
    wanted = train_cfg.batch_windows * train_cfg.minibatches * train_cfg.learners
    return max(1, math.ceil(wanted / windows_per_fragment))


class FragmentIntake:
    def __init__(
        self,
        recipe: Recipe,
        state: LearnerState,
        rollouts: RolloutWriter,
        note: Callable[[str], None],
        stopping: Callable[[], bool],
    ):
        self.train_cfg = recipe.train
        self.per_iteration = fragments_per_iteration(recipe.train, recipe.game.team_size)
        self.state = state  # its counters are read anew each time: a restore replaces them
        self.rollouts = rollouts
        self.note = note
        self.stopping = stopping  # a stop was requested: return what has come

    def take(self, source: FragmentSource) -> Intake | None:
        """The iteration's fragments (fewer when a stop is requested; None when none came)."""
        counters = self.state.counters
        policy, max_staleness = self.train_cfg.staleness_policy, self.train_cfg.max_staleness
        save_every = self.train_cfg.rollout_save_every
        self.note_health(source)
        fragments, staleness, t_copy = [], [], 0.0
        while len(fragments) < self.per_iteration and not self.stopping():
            got = source.get(timeout=1.0)
            if got is None:
                self.note_health(source)
                continue
            slot, views = got
            version = int(views["header"][0])
            worker = int(views["header"][1])
            lag = counters.version - version
            counters.samples_produced += int(views["train"].sum())
            if policy == "drop" and lag > max_staleness:
                counters.fragments_dropped += 1
                source.release(slot)
                continue
            t_copy0 = time.perf_counter()
            fragment = copy_fragment(views)
            t_copy += time.perf_counter() - t_copy0
            source.release(slot)
            counters.fragments += 1
            if save_every and counters.fragments % save_every == 0:
                self.rollouts.write(per_step_arrays(fragment))
            fragments.append((worker, fragment))
            staleness.append(lag)
        if not fragments:
            return None
        return Intake(fragments, staleness, t_copy)

    def note_health(self, source: FragmentSource) -> None:
        for event in source.check_health():
            self.note(f"{event.subject} {event.kind}: {event.detail}")
