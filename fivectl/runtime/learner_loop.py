"""The learner's side of ``fivectl train``: collect fragments, optimize, publish versions, checkpoint, log.

One loop, the paper's Fig. 2 on one machine:

    workers --fragments (shared memory)--> learner --PPO iteration--> new parameter version --> parameter store
                                            |                                                    (workers read it
                                            +--> checkpoints (Zarr), metrics and rollouts (Arrow)  between fragments)

The ``Trainer`` runs the loop; the roles around it live in modules of their own:

    run_setup          opens or creates the run, checks the recipe, picks the device
    fragment_source    the workers and their fragments, whatever carries them (processes, serial, Ray)
    fragment_intake    an iteration's fragments: staleness, copies out of the slots, saved rollouts
    publishing         new parameter versions for the workers (and the staleness 'wait' bound)
    checkpointing      when checkpoints are written, and how a session resumes (exactly)
    pool_upkeep        the opponent pool: results against past versions, new members
    evaluation_hook    evaluations beside training: the periodic rating, the anneal's guard
    learner_metrics    the metrics row and its log
    stopping           signals and the recipe's budgets
    distributed        the other data-parallel learners (``train.learners``)
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from typing import Any

import torch

from fivectl.config import Recipe
from fivectl.errors import RunFailed
from fivectl.rl.learner import FragmentBatch, keep_trained_teams
from fivectl.rl.schedules import Hyperparameters
from fivectl.runtime.allocator import keep_freed_memory
from fivectl.runtime.checkpointing import Checkpointing
from fivectl.runtime.distributed import LearnerGroup, check_learners
from fivectl.runtime.evaluation_hook import BackgroundEvaluations
from fivectl.runtime.fragment_intake import FragmentIntake, Intake
from fivectl.runtime.fragment_source import FragmentSource, FragmentSourceOptions, open_fragment_source
from fivectl.runtime.game_change_hook import GameChangeHook, NoGameChange
from fivectl.runtime.inference import resolve_acting
from fivectl.runtime.init_from import InitialWeights
from fivectl.runtime.learner_batch import learner_batch
from fivectl.runtime.learner_metrics import BufferedMetrics, IterationTimes, games_finished, metrics_row
from fivectl.runtime.live import LiveView
from fivectl.runtime.params import ParameterStore
from fivectl.runtime.pool_upkeep import PoolUpkeep
from fivectl.runtime.publishing import Publisher
from fivectl.runtime.run_setup import (
    TrainOptions,
    check_recipe_for_training,
    open_or_create_run,
    resolve_device,
)
from fivectl.runtime.run_state import Counters, build_learner_state
from fivectl.runtime.stopping import TrainingStop, stop_signals
from fivectl.runtime.worker import warm_up_game
from fivectl.schema import ObsSchema
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.rollouts import RolloutWriter
from fivectl.store.rundir import RunDir


class Trainer:
    """One training session of a run: the loop, and the collaborators it hands each role to."""

    def __init__(
        self, run: RunDir, recipe: Recipe, opts: TrainOptions, initial: InitialWeights | None = None
    ):
        check_recipe_for_training(recipe)
        self.run = run
        self.recipe = recipe
        self.opts = opts
        self.train_cfg = recipe.train
        self.schema: ObsSchema = run.obs_schema(recipe.model.schema_version)
        self.device = resolve_device(self.train_cfg.device)
        self.view: LiveView | None = None
        self.stop = TrainingStop(self.train_cfg)
        self.metrics = BufferedMetrics(run.metrics_path, run.logs_path / "tensorboard")
        self.anneal: GameChangeHook = (
            opts.game_change(run.path, recipe) if opts.game_change is not None else NoGameChange()
        )
        self.launch = opts.launch
        if self.launch is not None and self.device.type == "cuda":
            # under torchrun rank 0 takes its machine's GPU LOCAL_RANK (0 when torchrun started it)
            self.device = torch.device("cuda", self.launch.local_rank)
            torch.cuda.set_device(self.device)
        check_learners(self.train_cfg.learners, self.device, self.launch)
        self.state = build_learner_state(recipe, self.schema, self.device, self.train_cfg.workers)
        self.checkpoints = Checkpointing(
            run,
            recipe,
            self.schema,
            state=self.state,
            metrics=self.metrics,
            anneal=self.anneal,
            note=self.note,
        )
        self.evaluations = BackgroundEvaluations(self.anneal, self.checkpoints, self.note)
        self.pool = PoolUpkeep(self.state, self.checkpoints)
        self.learners: LearnerGroup | None = None  # the other data-parallel learners, started by run_loop
        self.initial = initial  # a new run's starting weights (--init-from), applied before version 0

    @property
    def counters(self) -> Counters:
        return self.state.counters  # read anew each time: a restore replaces them

    def note(self, text: str) -> None:
        if self.view is not None:
            self.view.note(text)

    # ---- the loop ----------------------------------------------------------------------------------------------

    def run_loop(self) -> dict[str, Any]:
        self.view = LiveView(f"fivectl train {self.run.path}") if self.opts.live else None
        resumed_from = self.checkpoints.start_session(self.opts.resume, self.initial)
        if self.train_cfg.learners > 1:
            self.start_learners()
        warm_up_game(self.recipe, self.schema)
        publisher = Publisher.open(self.recipe, self.state, self.anneal, self.device, self.stop.is_requested)
        source = open_fragment_source(self.train_cfg.backend, self.source_options(publisher.params))
        rollouts = RolloutWriter(
            self.run.rollouts_path,
            self.schema,
            prefix=f"v{self.counters.version:08d}",
            keep_bytes=int(self.train_cfg.rollout_keep_gb * 1e9),
        )
        intake = FragmentIntake(self.recipe, self.state, rollouts, self.note, self.stop.is_requested)
        if self.opts.evaluation is not None:
            self.evaluations.start(self.opts.evaluation(self.run.path, self.recipe))
        start = time.monotonic()
        wall_at_start = self.counters.wall_seconds
        try:
            # Ctrl-C and SIGTERM: finish the step, write a checkpoint, exit cleanly.
            with stop_signals(self.stop), self.view if self.view is not None else nullcontext():
                if resumed_from is not None:
                    self.note(
                        f"resumed from checkpoint v{resumed_from} (iteration {self.counters.iteration})"
                    )
                while not self.stop.due(self.counters.samples, start):
                    row = self.iteration(source, intake, publisher)
                    self.counters.wall_seconds = wall_at_start + time.monotonic() - start
                    if row is None:
                        continue
                    self.metrics.append(row)
                    if self.view is not None:
                        self.view.update(row)
                    # Each may write a checkpoint; a checkpoint first writes the buffered metrics rows, so a
                    # kill -9 in between never leaves a checkpoint ahead of the metrics (workers see a new pool
                    # member with the next published version).
                    self.pool.grow()
                    self.evaluations.after_iteration(self.counters.version)
                    self.checkpoints.save_when_due()
                self.evaluations.finish(interrupted=self.stop.interrupted)
                self.checkpoints.save_if_new()
        finally:
            self.close(source, rollouts, publisher)
        return self.summary()

    def start_learners(self) -> None:
        """The other data-parallel learners, from the checkpoint just restored or written (sent to them: they
        read nothing from the run directory)."""
        checkpoint = CheckpointStore(self.run.checkpoints_path).load(self.checkpoints.last_version)
        self.learners = LearnerGroup(self.recipe, self.schema, checkpoint, self.device, self.launch)
        self.state.learner.data_parallel = self.learners.data_parallel

    def source_options(self, params: ParameterStore) -> FragmentSourceOptions:
        return FragmentSourceOptions(
            recipe=self.recipe,
            schema=self.schema,
            params=params,
            seed=self.train_cfg.seed,
            workers=self.train_cfg.workers,
            slots_per_worker=self.train_cfg.slots_per_worker,
            heartbeat_timeout_s=self.opts.heartbeat_timeout_s,
            run_dir=self.run.path,
            acting=resolve_acting(self.train_cfg, self.device),
            device=str(self.device),
        )

    def close(self, source: FragmentSource, rollouts: RolloutWriter, publisher: Publisher) -> None:
        source.close()
        if self.learners is not None:
            self.learners.close()
        self.checkpoints.close()
        self.evaluations.close(interrupted=self.stop.interrupted)
        try:
            rollouts.close()
        finally:
            try:
                self.metrics.close()
            finally:
                publisher.close()

    def summary(self) -> dict[str, Any]:
        return {
            "run": str(self.run.path),
            "stop_reason": self.stop.reason,
            "version": self.counters.version,
            "checkpoint": self.checkpoints.last_version,
            "iterations": self.counters.iteration,
            "samples": self.counters.samples,
            "games": self.counters.games,
            "wall_seconds": round(self.counters.wall_seconds, 2),
        }

    # ---- one iteration -----------------------------------------------------------------------------------------

    def iteration(
        self, source: FragmentSource, intake: FragmentIntake, publisher: Publisher
    ) -> dict[str, Any] | None:
        """Take fragments, learn from them, publish when due; the iteration's metrics row (None: no fragments)."""
        tic = time.perf_counter()
        taken = intake.take(source)
        if taken is None:
            return None
        t_wait = time.perf_counter() - tic

        hp = publisher.hyperparameters()
        batch = self.batch(taken, hp)
        t_learn0 = time.perf_counter()
        learn = self.learn(batch, hp)
        t_learn = time.perf_counter() - t_learn0

        fragments = taken.arrays
        trained = self.count_trained(fragments)
        if self.state.average is not None:
            self.state.average.update(self.state.model, trained, self.counters.samples)
        self.counters.gradient_steps += self.steps_per_iteration
        publisher.after_steps(self.steps_per_iteration, source)

        elapsed = time.perf_counter() - tic
        t_copy = taken.seconds_copy
        self.counters.games += games_finished(fragments)
        row = metrics_row(
            counters=self.counters,
            fragments=fragments,
            staleness=taken.staleness,
            learn=learn,
            source_stats=source.stats(),
            times=IterationTimes(elapsed=elapsed, wait=t_wait - t_copy, learn=t_learn, copy=t_copy),
            bot_results=self.pool.bot_results,
            bot_results_by_level=self.pool.bot_results_by_level,
            rating=self.evaluations.latest_rating(),
            pool_metrics=self.state.pool.metrics(),
            reward_cfg=self.recipe.reward,
            off_lane=hp.off_lane,
        )
        row.update(self.anneal.metrics(fragments))
        return row

    @property
    def steps_per_iteration(self) -> int:
        return self.train_cfg.epochs * self.train_cfg.minibatches

    def batch(self, taken: Intake, hp: Hyperparameters) -> FragmentBatch:
        """The learner batch: rewards scaled per worker, and only the teams that train when they fill every
        minibatch of every learner."""
        t = self.train_cfg
        batch = learner_batch(taken.fragments, self.state.reward_scalers, hp.gamma, t.scale_rewards)
        team_size = self.recipe.game.team_size
        trained_only = keep_trained_teams(batch, team_size)
        if trained_only.columns // team_size >= t.minibatches * t.learners:
            batch = trained_only
        return batch

    def learn(self, batch: FragmentBatch, hp: Hyperparameters) -> dict[str, float]:
        """One PPO iteration on the batch: here, or on this learner's share while the others take theirs."""
        if self.learners is None:
            return self.state.learner.train_iteration(batch, hp)
        try:
            mine = self.learners.share(batch, hp)
            # the normalizers learn from the whole batch here, then every rank gets them
            learn = self.state.learner.train_iteration(mine, hp, normalizer_obs=batch.obs)
            self.learners.finish(self.state.model)
        except RuntimeError as e:  # torch.distributed reports a lost rank as a RuntimeError
            raise self.learners.failed(e) from e
        return learn

    def count_trained(self, fragments: list[dict[str, Any]]) -> int:
        """Counters, pool results and the anneal's ramp advance by the samples just trained on (returned)."""
        counters = self.counters
        trained = int(sum(f["train"].sum() for f in fragments))
        counters.iteration += 1
        self.pool.record_results(fragments)
        counters.samples += trained
        for event in self.anneal.advance(counters.samples, counters.version):
            self.note(event)
        counters.samples_consumed += trained * self.train_cfg.epochs
        return trained


def train_run(opts: TrainOptions) -> dict[str, Any]:
    # One torch thread per process: workers and learner share the cores, and a second thread per process
    # slows torch badly whenever the other core is busy (benchmarks/RESULTS.md).
    torch.set_num_threads(1)
    keep_freed_memory()
    run, recipe, initial = open_or_create_run(opts)
    trainer = Trainer(run, recipe, opts, initial)
    try:
        return trainer.run_loop()
    except OSError as e:
        raise RunFailed(
            f"{run.path}: {e.strerror or e}{(': ' + str(e.filename)) if e.filename else ''}"
        ) from e
