"""When the learner writes checkpoints, what goes with them, and how a training session starts from one.

``run_state.RunCheckpoints`` writes a learner state to the run's checkpoint store and restores it; this decides
when: version 0 before the first iteration, every ``train.checkpoint_every`` versions, a version that joins the
opponent pool or is about to be evaluated, and the last version at a stop. The buffered metrics rows are written
first, so a checkpoint is never ahead of the metrics, and the anneal's state goes into its attributes.

A session starts by removing a crash's leftovers (a half-staged checkpoint, an unpublished rollout file), then
resumes from the newest good checkpoint, exactly: the metrics rows written after it are dropped (they are logged
again), and rollout workers are reseeded from (seed, worker, version), so a resumed run plays the same games as a
run that had stopped cleanly there.
"""

from __future__ import annotations

from collections.abc import Callable

from fivectl.config import Recipe
from fivectl.runtime.game_change_hook import GameChangeHook
from fivectl.runtime.init_from import InitialWeights
from fivectl.runtime.learner_metrics import BufferedMetrics
from fivectl.runtime.run_state import LearnerState, RunCheckpoints
from fivectl.schema import ObsSchema
from fivectl.store.rollouts import remove_partial_rollouts
from fivectl.store.rundir import RunDir


class Checkpointing:
    def __init__(
        self,
        run: RunDir,
        recipe: Recipe,
        schema: ObsSchema,
        *,
        state: LearnerState,
        metrics: BufferedMetrics,
        anneal: GameChangeHook,
        note: Callable[[str], None],
    ):
        self.run = run
        self.every = recipe.train.checkpoint_every
        self.run_checkpoints = RunCheckpoints(run, recipe, schema, note)
        self.state = state  # its counters are read anew each time: a restore replaces them
        self.metrics = metrics
        self.anneal = anneal
        self.note = note

    @property
    def last_version(self) -> int | None:
        return self.run_checkpoints.last_version

    # ---- writing -----------------------------------------------------------------------------------------------

    def save(self) -> int:
        self.metrics.flush()  # a checkpoint is never ahead of the metrics
        anneal = self.anneal.state_dict()
        extra = {"anneal": anneal} if anneal is not None else None
        return self.run_checkpoints.save(self.state, extra, in_use=self.anneal.versions_in_use())

    def ensure_current(self) -> None:
        """The current version on disk (an evaluation process loads it)."""
        if self.state.counters.version != self.last_version:
            self.save()

    def save_if_new(self, why: str = "") -> None:
        """The current version on disk, announced (``why``: what it is written for)."""
        version = self.state.counters.version
        if version != self.last_version:
            self.save()
            self.note(f"checkpoint v{version}{why}")

    def save_when_due(self) -> None:
        """Every ``train.checkpoint_every`` versions."""
        if self.state.counters.version % self.every == 0:
            self.save_if_new()

    # ---- starting a session ------------------------------------------------------------------------------------

    def start_session(self, resume: bool, initial: InitialWeights | None) -> int | None:
        """Resume from the newest good checkpoint (``resume``) or start afresh, from ``initial`` when given; a
        fresh run writes version 0, so a run always has a checkpoint to resume or evaluate. Returns the version
        resumed from (None: a fresh start)."""
        # Leftovers of a crash are never read: remove them.
        self.run_checkpoints.store.delete_staging()
        remove_partial_rollouts(self.run.rollouts_path)
        resumed_from = None
        if resume and self.run_checkpoints.store.latest() is not None:
            resumed_from = self.restore()
        elif resume:
            self.note("no checkpoint yet: starting from scratch")
        if resumed_from is None:
            self.anneal.load_state_dict(None, self.state.counters.samples, self.state.counters.version)
        if resumed_from is None and initial is not None and self.last_version is None:
            self.start_from(initial)
        if self.last_version is None:
            self.save()
        return resumed_from

    def restore(self) -> int:
        version = self.run_checkpoints.restore(self.state)
        counters = self.state.counters
        self.anneal.load_state_dict(
            self.run_checkpoints.restored_attrs.get("anneal"), counters.samples, counters.version
        )
        removed = self.metrics.truncate_after(counters.iteration)
        if removed:
            self.note(f"dropped {removed} metric rows written after checkpoint v{version}")
        return version

    def start_from(self, initial: InitialWeights) -> None:
        """Load ``--init-from``'s weights into the fresh network; version 0 (saved next) holds them."""
        initial.apply(self.state.model)
        if self.state.average is not None:
            self.state.average.reset(self.state.model)
        self.run.add_lineage(initial.lineage_entry())
        fresh = f" ({', '.join(initial.fresh)} fresh)" if initial.fresh else ""
        self.note(f"network from {initial.spec}, v{initial.version}{fresh}")

    def close(self) -> None:
        self.run_checkpoints.close()
