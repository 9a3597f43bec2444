"""The learner's side of ``fivectl train``: collect fragments, optimize, publish versions, checkpoint, log.

One loop, the paper's Fig. 2 on one machine:

    workers --fragments (shared memory)--> learner --PPO iteration--> new parameter version --> parameter store
                                            |                                                    (workers read it
                                            +--> checkpoints (Zarr), metrics and rollouts (Arrow)  between fragments)

The roles around the loop live beside it: ``run_setup`` opens the run, ``fragment_queue`` runs and supervises the
workers and hands their fragments over, ``params`` publishes versions to them, ``run_state`` checkpoints and
restores (resume is exact: rollout workers are reseeded from (seed, worker, version), so a resumed run plays the
same games as a run that had stopped cleanly at that checkpoint), ``learner_metrics`` logs.
"""

from __future__ import annotations

import math
import signal
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import numpy as np
import torch

from fivectl.config import Recipe
from fivectl.errors import RunFailed
from fivectl.rl.learner import keep_trained_teams
from fivectl.rl.schedules import Progress, hyperparameters_at
from fivectl.runtime.allocator import keep_freed_memory
from fivectl.runtime.buffers import copy_fragment
from fivectl.runtime.distributed import LearnerGroup, check_learners
from fivectl.runtime.evaluation_hook import EvaluationHook, NoEvaluation
from fivectl.runtime.fragment_queue import ProcessSource, SerialSource
from fivectl.runtime.game_change_hook import GameChangeHook, NoGameChange
from fivectl.runtime.init_from import InitialWeights
from fivectl.runtime.learner_batch import learner_batch, per_step_arrays
from fivectl.runtime.learner_metrics import BufferedMetrics, IterationTimes, games_finished, metrics_row
from fivectl.runtime.live import LiveView
from fivectl.runtime.opponents import LATEST
from fivectl.runtime.params import ParameterStore
from fivectl.runtime.ray_backend import RaySource
from fivectl.runtime.run_setup import (
    TrainOptions,
    check_recipe_for_training,
    open_or_create_run,
    resolve_device,
)
from fivectl.runtime.run_state import Counters, RunCheckpoints, build_learner_state
from fivectl.runtime.worker import warm_up_game
from fivectl.schema import ObsSchema
from fivectl.store.rollouts import RolloutWriter, remove_partial_rollouts
from fivectl.store.rundir import RunDir


class Trainer:
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
        self.team_size = recipe.game.team_size
        self.agents_per_worker = self.train_cfg.games_per_worker * 2 * self.team_size
        self.n_workers = self.train_cfg.workers
        self.view: LiveView | None = None
        self.checkpoints = RunCheckpoints(run, recipe, self.schema, self.note)
        self.metrics = BufferedMetrics(run.metrics_path, run.logs_path / "tensorboard")
        self.evaluator: EvaluationHook = NoEvaluation()
        self.anneal: GameChangeHook = (
            opts.game_change(run.path, recipe) if opts.game_change is not None else NoGameChange()
        )

        check_learners(self.train_cfg.learners, self.device)
        self.state = build_learner_state(recipe, self.schema, self.device, self.n_workers)
        self.learners: LearnerGroup | None = None  # the other data-parallel learners, started by run_loop
        self.initial = initial  # a new run's starting weights (--init-from), applied before version 0
        self.bot_results: deque[float] = deque(maxlen=200)  # recent games against scripted bots: 1, 0.5, 0
        self.stop_reason = ""
        self._stop_requested = False

    @property
    def counters(self) -> Counters:
        return self.state.counters

    # ---- checkpoints -------------------------------------------------------------------------------------------

    def save_checkpoint(self) -> int:
        self.metrics.flush()  # a checkpoint is never ahead of the metrics
        anneal = self.anneal.state_dict()
        extra = {"anneal": anneal} if anneal is not None else None
        return self.checkpoints.save(self.state, extra, in_use=self.anneal.versions_in_use())

    def restore(self) -> int:
        version = self.checkpoints.restore(self.state)
        self.anneal.load_state_dict(
            self.checkpoints.restored_attrs.get("anneal"), self.counters.samples, self.counters.version
        )
        removed = self.metrics.truncate_after(self.counters.iteration)
        if removed:
            self.note(f"dropped {removed} metric rows written after checkpoint v{version}")
        return version

    def start_from(self, initial: InitialWeights) -> None:
        """Load ``--init-from``'s weights into the fresh network; version 0 (saved next) holds them."""
        initial.apply(self.state.model)
        self.run.add_lineage(initial.lineage_entry())
        fresh = f" ({', '.join(initial.fresh)} fresh)" if initial.fresh else ""
        self.note(f"network from {initial.spec}, v{initial.version}{fresh}")

    def checkpoint_if_new(self, why: str = "") -> None:
        if self.counters.version != self.checkpoints.last_version:
            self.save_checkpoint()
            self.note(f"checkpoint v{self.counters.version}{why}")

    # ---- the loop ----------------------------------------------------------------------------------------------

    def note(self, text: str) -> None:
        if self.view is not None:
            self.view.note(text)

    def request_stop(self, *_: Any) -> None:
        if self._stop_requested:
            raise KeyboardInterrupt
        self._stop_requested = True
        self.stop_reason = "interrupted"

    def fragments_per_iteration(self) -> int:
        windows_per_fragment = self.agents_per_worker * (
            self.train_cfg.fragment_length // self.train_cfg.bptt
        )
        # batch_windows is per learner: with several, the iteration's batch grows with them (paper: per GPU)
        wanted = self.train_cfg.batch_windows * self.train_cfg.minibatches * self.train_cfg.learners
        return max(1, math.ceil(wanted / windows_per_fragment))

    def open_fragment_source(self, params: ParameterStore) -> ProcessSource | SerialSource | RaySource:
        if self.train_cfg.backend == "ray" or self.n_workers > 0:
            source = RaySource if self.train_cfg.backend == "ray" else ProcessSource
            return source(
                self.recipe,
                self.schema,
                params,
                self.train_cfg.seed,
                self.n_workers,
                slots_per_worker=self.train_cfg.slots_per_worker,
                heartbeat_timeout_s=self.opts.heartbeat_timeout_s,
                run_dir=self.run.path,
            )
        return SerialSource(self.recipe, self.schema, params, self.train_cfg.seed, run_dir=self.run.path)

    def run_loop(self) -> dict[str, Any]:
        self.view = LiveView(f"fivectl train {self.run.path}") if self.opts.live else None
        # Leftovers of a crash (a half-staged checkpoint, an unpublished rollout file) are never read: remove them.
        self.checkpoints.store.delete_staging()
        remove_partial_rollouts(self.run.rollouts_path)
        resumed_from = None
        if self.opts.resume and self.checkpoints.store.latest() is not None:
            resumed_from = self.restore()
        elif self.opts.resume:
            self.note("no checkpoint yet: starting from scratch")
        if resumed_from is None:
            self.anneal.load_state_dict(None, self.counters.samples, self.counters.version)
        if resumed_from is None and self.initial is not None and self.checkpoints.last_version is None:
            self.start_from(self.initial)
        if self.checkpoints.last_version is None:
            self.save_checkpoint()  # version 0: a run always has a checkpoint to resume or evaluate
        if self.train_cfg.learners > 1:
            # every rank starts from the checkpoint just restored or written
            self.learners = LearnerGroup(
                self.recipe, self.run.path, self.checkpoints.last_version, self.device
            )
            self.state.learner.data_parallel = self.learners.data_parallel
        warm_up_game(self.recipe, self.schema)
        model = self.state.model
        params = ParameterStore.for_model(  # shared memory for local worker processes only
            model.cpu() if self.device.type != "cpu" else model,
            self.n_workers > 0 and self.train_cfg.backend == "local",
        )
        model.to(self.device)
        self.publish(params)
        source = self.open_fragment_source(params)
        rollouts = RolloutWriter(
            self.run.rollouts_path,
            self.schema,
            prefix=f"v{self.counters.version:08d}",
            keep_bytes=int(self.train_cfg.rollout_keep_gb * 1e9),
        )
        if self.opts.evaluation is not None:
            self.evaluator = self.opts.evaluation(self.run.path, self.recipe)
        start = time.monotonic()
        wall_at_start = self.counters.wall_seconds
        try:
            # Ctrl-C and SIGTERM (schedulers, `timeout`): finish the step, write a checkpoint, exit cleanly.
            with stop_signals(self.request_stop), self.view if self.view is not None else nullcontext():
                if resumed_from is not None:
                    self.note(
                        f"resumed from checkpoint v{resumed_from} (iteration {self.counters.iteration})"
                    )
                while not self._should_stop(start):
                    row = self.iteration(source, params, rollouts)
                    self.counters.wall_seconds = wall_at_start + time.monotonic() - start
                    if row is None:
                        continue
                    self.metrics.append(row)
                    if self.view is not None:
                        self.view.update(row)
                    # Each may write a checkpoint; save_checkpoint first writes the buffered metrics rows, so a
                    # kill -9 in between never leaves a checkpoint ahead of the metrics (workers see a new pool
                    # member with the next published version).
                    self.grow_pool()
                    self.maybe_evaluate()
                    for event in self.anneal.guard(self.counters.version, self.ensure_checkpoint):
                        self.note(event)
                    if self.counters.version % self.train_cfg.checkpoint_every == 0:
                        self.checkpoint_if_new()
                self.finish_anneal_guard()
                self.checkpoint_if_new()
        finally:
            source.close()
            if self.learners is not None:
                self.learners.close()
            self.checkpoints.close()
            self.evaluator.close(wait_s=120.0 if self.stop_reason != "interrupted" else 0.0)
            self.anneal.close()
            try:
                rollouts.close()
            finally:
                try:
                    self.metrics.close()
                finally:
                    params.close(unlink=True)
        return {
            "run": str(self.run.path),
            "stop_reason": self.stop_reason,
            "version": self.counters.version,
            "checkpoint": self.checkpoints.last_version,
            "iterations": self.counters.iteration,
            "samples": self.counters.samples,
            "games": self.counters.games,
            "wall_seconds": round(self.counters.wall_seconds, 2),
        }

    def _should_stop(self, start: float) -> bool:
        t = self.train_cfg
        if self._stop_requested:
            return True
        if t.max_samples and self.counters.samples >= t.max_samples:
            self.stop_reason = "max_samples"
            return True
        if t.max_minutes and (time.monotonic() - start) / 60.0 >= t.max_minutes:
            self.stop_reason = "max_minutes"
            return True
        return False

    def publish(self, params: ParameterStore) -> None:
        hp = self.hyperparameters()
        pool = self.state.pool
        params.publish(
            self.state.model,
            self.counters.version,
            pool=(np.array(pool.versions, dtype=np.int64), pool.probabilities()),
            team_spirit=hp.team_spirit,
            bot_fraction=hp.bot_fraction,
            change_fraction=self.anneal.fraction(),
            samples=float(self.counters.samples),
        )

    def hyperparameters(self):
        progress = Progress(samples=self.counters.samples, versions=self.counters.version)
        return hyperparameters_at(self.recipe, progress, self.counters.warmup_end_version)

    # ---- one iteration -----------------------------------------------------------------------------------------

    def note_health(self, source) -> None:
        for event in source.check_health():
            self.note(f"worker {event.worker_id} {event.kind}: {event.detail}")

    def iteration(self, source, params: ParameterStore, rollouts: RolloutWriter) -> dict[str, Any] | None:
        tic = time.perf_counter()
        self.note_health(source)
        fragments, staleness, t_copy = [], [], 0.0
        want = self.fragments_per_iteration()
        while len(fragments) < want and not self._stop_requested:
            got = source.get(timeout=1.0)
            if got is None:
                self.note_health(source)
                continue
            slot, views = got
            version = int(views["header"][0])
            worker = int(views["header"][1])
            lag = self.counters.version - version
            self.counters.samples_produced += int(views["train"].sum())
            if self.train_cfg.staleness_policy == "drop" and lag > self.train_cfg.max_staleness:
                self.counters.fragments_dropped += 1
                source.release(slot)
                continue
            t_copy0 = time.perf_counter()
            fragment = copy_fragment(views)
            t_copy += time.perf_counter() - t_copy0
            source.release(slot)
            self.counters.fragments += 1
            if (
                self.train_cfg.rollout_save_every
                and self.counters.fragments % self.train_cfg.rollout_save_every == 0
            ):
                rollouts.write(per_step_arrays(fragment))
            fragments.append((worker, fragment))
            staleness.append(lag)
        if not fragments:
            return None
        t_wait = time.perf_counter() - tic

        hp = self.hyperparameters()
        batch = learner_batch(fragments, self.state.reward_scalers, hp.gamma, self.train_cfg.scale_rewards)
        trained_only = keep_trained_teams(batch, self.team_size)
        if trained_only.columns // self.team_size >= self.train_cfg.minibatches * self.train_cfg.learners:
            batch = trained_only
        t_learn0 = time.perf_counter()
        learn = self.learn(batch, hp)
        t_learn = time.perf_counter() - t_learn0

        frs = [f for _, f in fragments]
        trained = int(sum(f["train"].sum() for f in frs))
        self.counters.iteration += 1
        self.record_pool_results(frs)
        self.counters.samples += trained
        for event in self.anneal.advance(self.counters.samples, self.counters.version):
            self.note(event)
        self.counters.samples_consumed += trained * self.train_cfg.epochs
        steps = self.train_cfg.epochs * self.train_cfg.minibatches
        self.counters.gradient_steps += steps
        self.counters.steps_since_publish += steps
        if self.counters.steps_since_publish >= self.train_cfg.publish_every:
            self.wait_for_staleness_bound(source)
            self.counters.version += 1
            self.counters.steps_since_publish = 0
            self.publish(params)

        elapsed = time.perf_counter() - tic
        self.counters.games += games_finished(frs)
        row = metrics_row(
            self.counters,
            frs,
            staleness,
            learn,
            source.stats(),
            IterationTimes(elapsed=elapsed, wait=t_wait - t_copy, learn=t_learn, copy=t_copy),
            self.bot_results,
            self.evaluator.latest_rating() if self.evaluator.enabled else None,
            self.state.pool.metrics(),
            self.recipe.reward,
        )
        row.update(self.anneal.metrics(frs))
        return row

    def learn(self, batch, hp) -> dict[str, float]:
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

    def finish_anneal_guard(self) -> None:
        """A clean stop waits for the anneal's guard evaluation under way and checkpoints its verdict (a stop
        by signal does not wait: the evaluation starts again on resume)."""
        if self.stop_reason == "interrupted":
            return
        events = self.anneal.finish(wait_s=120.0)
        for event in events:
            self.note(event)
        if events:
            self.save_checkpoint()  # the same version, now with the verdict in its anneal state

    def ensure_checkpoint(self) -> None:
        """The current version on disk (an evaluation process loads it)."""
        if self.counters.version != self.checkpoints.last_version:
            self.save_checkpoint()

    def maybe_evaluate(self) -> None:
        """Periodic evaluation of the new version (recipe ``eval.every_versions``) by the injected hook."""
        version = self.counters.version
        if not self.evaluator.due(version) or self.evaluator.busy():
            return
        if version != self.checkpoints.last_version:
            self.save_checkpoint()
        if self.evaluator.submit(version):
            self.note(f"evaluating v{version} (TrueSkill) in the background")

    def record_pool_results(self, fragments: list[dict[str, np.ndarray]]) -> None:
        """Games against past versions that ended: q_i falls when the learner beat version i (paper N). Games
        against scripted bots (``selfplay.bot_fraction``) feed the ``bot_win_rate_recent`` metric."""
        for f in fragments:
            against_bot = (f["opponent"] < LATEST) & (f["game_seconds"] > 0)
            winner = f["winner"][against_bot]
            self.bot_results.extend(
                np.where(winner < 0, 0.5, winner == f["learner_side"][against_bot]).tolist()
            )
            ended = (f["opponent"] >= 0) & (f["game_seconds"] > 0)
            if ended.any():
                won = f["winner"][ended] == f["learner_side"][ended]
                self.state.pool.record_results(f["opponent"][ended], won)

    def grow_pool(self) -> None:
        """Every ``selfplay.add_every`` versions the current one joins the pool; it needs a checkpoint to be
        loadable by the workers."""
        version = self.counters.version
        if version > 0 and self.state.pool.maybe_add(version, version):
            self.checkpoint_if_new(" (joined the opponent pool)")

    def wait_for_staleness_bound(self, source) -> None:
        """'wait' policy: publish a new version only when no worker still plays one older than the bound."""
        if self.train_cfg.staleness_policy != "wait":
            return
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not self._stop_requested:
            oldest = source.oldest_version_in_flight()
            if oldest is None or self.counters.version + 1 - oldest <= self.train_cfg.max_staleness:
                return
            time.sleep(0.005)


@contextmanager
def stop_signals(handler: Callable[..., None]) -> Iterator[None]:
    """Route SIGINT and SIGTERM to ``handler`` for the block, then restore the previous handlers."""
    old_handlers = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in old_handlers.items():
            signal.signal(sig, old)


def train_run(opts: TrainOptions) -> dict[str, Any]:
    # One torch thread per process: workers and learner share the cores, and a second thread per process
    # slowed torch 3.3x here whenever the other core was busy.
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
