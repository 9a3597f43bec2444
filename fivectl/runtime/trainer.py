"""The learner's side of ``fivectl train``: collect fragments, optimize, publish versions, checkpoint, log.

One loop, the paper's Fig. 2 on one machine:

    workers --fragments (shared memory)--> learner --PPO iteration--> new parameter version --> parameter store
                                            |                                                    (workers read it
                                            +--> checkpoints (Zarr), metrics and rollouts (Arrow)  between fragments)

Resume restores everything a checkpoint holds (model with its normalizers, optimizer, reward scalers, counters,
schedule positions, RNG states) and truncates metrics written after it, so iterations continue with no gap and
no duplicate. Rollout workers are reseeded from (seed, worker, version): a resumed run plays the same games as
a run that had stopped cleanly at that checkpoint.
"""

from __future__ import annotations

import math
import signal
import time
import warnings
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fivectl import __version__
from fivectl.config import Recipe, load_recipe
from fivectl.config.loader import to_dict
from fivectl.errors import BadInput, RunFailed, SchemaMismatch
from fivectl.model import PolicyNet
from fivectl.rl.aux import aux_losses
from fivectl.rl.gae import gamma_from_horizon
from fivectl.rl.learner import FragmentBatch, PPOLearner, keep_trained_teams
from fivectl.rl.normalize import RewardScaler
from fivectl.rl.reward import weighted_components
from fivectl.rl.schedules import Progress, hyperparameters_at, step_seconds
from fivectl.runtime.evaluator import PeriodicEvaluator
from fivectl.runtime.live import LiveView
from fivectl.runtime.opponents import LATEST
from fivectl.runtime.params import ParameterStore
from fivectl.runtime.sources import ProcessSource, SerialSource
from fivectl.runtime.worker import warm_up_game
from fivectl.schema import ObsSchema, load_schema
from fivectl.selfplay import OpponentPool
from fivectl.sim.components import REWARD_COMPONENTS
from fivectl.store.checkpoint import CheckpointFallbackWarning, CheckpointStore
from fivectl.store.metrics import MetricsLog
from fivectl.store.retention import PoolSlimmer
from fivectl.store.rollouts import RolloutWriter, remove_partial_rollouts
from fivectl.store.rundir import RunDir
from fivectl.store.state_codec import flatten_state, set_torch_rng_state, torch_rng_state, unflatten_state

METRICS_FLUSH_S = 10.0  # longest a metrics row waits in memory (between checkpoints) before it is written


@dataclass
class TrainOptions:
    run_dir: Path
    recipe_path: Path | None = None
    resume: bool = False
    overrides: list[str] = field(default_factory=list)
    heartbeat_timeout_s: float = 120.0
    live: bool = True


@dataclass
class Counters:
    """Everything that counts training progress; saved in every checkpoint."""

    version: int = 0
    iteration: int = 0
    gradient_steps: int = 0
    samples: int = 0  # agent-steps trained on (max_samples and schedules count these)
    samples_produced: int = 0  # agent-steps received from workers, dropped ones included
    samples_consumed: int = 0  # samples × passes over them (sample reuse = consumed / produced)
    fragments: int = 0
    fragments_dropped: int = 0
    games: int = 0
    wall_seconds: float = 0.0
    steps_since_publish: int = 0
    warmup_end_version: int = 0


def resolve_device(name: str) -> torch.device:
    if name == "cuda" and not torch.cuda.is_available():
        raise BadInput("--device cuda: no CUDA device on this machine (use auto or cpu)")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


# ---- opening a run -----------------------------------------------------------------------------------------------


def open_or_create_run(opts: TrainOptions) -> tuple[RunDir, Recipe]:
    if opts.resume:
        run = RunDir.open(opts.run_dir)
        recipe = run.load_recipe(opts.overrides)
        if opts.recipe_path is not None:
            given = load_recipe(opts.recipe_path, opts.overrides)
            for section in ("game", "model"):
                if getattr(given, section) != getattr(recipe, section):
                    raise BadInput(
                        f"{opts.recipe_path}: its [{section}] differs from the run's ({run.recipe_path}); "
                        "a running experiment changes through `fivectl surgery` / `fivectl anneal`"
                    )
        return run, recipe  # overrides (budgets, workers, ...) apply to this session only
    if opts.recipe_path is None:
        raise BadInput("give a RECIPE to start a run")
    recipe = load_recipe(opts.recipe_path, opts.overrides)
    check_recipe_for_training(recipe)
    resolve_device(recipe.train.device)
    load_schema(recipe.model.schema_version)
    return RunDir.create(opts.run_dir, recipe, recipe_source=str(opts.recipe_path)), recipe


def check_recipe_for_training(recipe: Recipe) -> None:
    t = recipe.train
    errors = []
    if t.fragment_length % t.bptt != 0:
        errors.append(
            f"train.fragment_length: {t.fragment_length} must be a multiple of train.bptt ({t.bptt})"
        )
    if t.epochs > t.max_sample_reuse:
        errors.append(
            f"train.epochs: {t.epochs} passes exceed train.max_sample_reuse ({t.max_sample_reuse:g})"
        )
    if errors:
        from fivectl.errors import ConfigError

        raise ConfigError(errors, "recipe")


# ---- the trainer -------------------------------------------------------------------------------------------------


class Trainer:
    def __init__(self, run: RunDir, recipe: Recipe, opts: TrainOptions):
        check_recipe_for_training(recipe)
        self.run = run
        self.recipe = recipe
        self.opts = opts
        self.train_cfg = recipe.train
        self.schema: ObsSchema = load_schema(recipe.model.schema_version)
        self.device = resolve_device(self.train_cfg.device)
        self.team_size = recipe.game.team_size
        self.agents_per_worker = self.train_cfg.games_per_worker * 2 * self.team_size
        self.n_workers = self.train_cfg.workers
        self.counters = Counters()
        self.checkpoints = CheckpointStore(run.checkpoints_path)
        self.slimmer = (
            PoolSlimmer(self.checkpoints, self.train_cfg.keep_last, self.train_cfg.milestone_every)
            if self.train_cfg.slim_pool_checkpoints
            else None
        )
        self.metrics_log = MetricsLog(run.metrics_path, tensorboard_dir=run.logs_path / "tensorboard")
        # Rows not yet on disk. They are written before each checkpoint (so a checkpoint is never ahead of the
        # metrics) or after METRICS_FLUSH_S: one file per row cost the learner ~4% (a file and an fsync each).
        # A kill loses only rows after the last checkpoint, which resume drops and re-logs anyway.
        self.pending_rows: list[dict[str, Any]] = []
        self.pending_since = time.monotonic()

        torch.manual_seed(self.train_cfg.seed)
        self.model = PolicyNet(self.schema, recipe.model, self.team_size, obs_clip=recipe.train.obs_clip).to(
            self.device
        )
        self.generator = torch.Generator().manual_seed(self.train_cfg.seed)
        self.learner = PPOLearner(
            self.model,
            self.train_cfg,
            team_size=self.team_size,
            aux_loss_fn=aux_losses,
            objective_gamma=gamma_from_horizon(self.train_cfg.aux_objective_horizon_s, step_seconds(recipe)),
            generator=self.generator,
        )
        self.reward_scalers = [RewardScaler(self.agents_per_worker) for _ in range(max(self.n_workers, 1))]
        self.pool = OpponentPool(recipe.selfplay)
        self.bot_results: deque[float] = deque(maxlen=200)  # recent games against scripted bots: 1, 0.5, 0
        self.last_checkpoint: int | None = None
        self.stop_reason = ""
        self._stop_requested = False

    # ---- checkpoints -------------------------------------------------------------------------------------------

    def checkpoint_attrs(self) -> dict[str, Any]:
        return {
            "fivectl_version": __version__,
            "schema_version": self.schema.version,
            "schema": self.schema.to_json(),
            "model_config": to_dict(self.recipe.model),
            "game_config": to_dict(self.recipe.game),
            "team_size": self.team_size,
            "counters": asdict(self.counters),
            "generator_state": self.generator.get_state().tolist(),
            "opponent_pool": self.pool.state_dict(),
            "recipe_name": self.recipe.name,
        }

    def log_metrics(self, row: dict[str, Any]) -> None:
        if not self.pending_rows:
            self.pending_since = time.monotonic()
        self.pending_rows.append(row)
        if time.monotonic() - self.pending_since >= METRICS_FLUSH_S:
            self.flush_metrics()

    def flush_metrics(self) -> None:
        if self.pending_rows:
            self.metrics_log.append(self.pending_rows)
            self.pending_rows = []

    def save_checkpoint(self) -> int:
        self.flush_metrics()
        version = self.counters.version
        model_state = self.model.state_dict()
        opt_arrays, opt_meta = flatten_state(self.learner.state_dict())
        scaler_arrays, scaler_meta = flatten_state([s.state_dict() for s in self.reward_scalers])
        attrs = self.checkpoint_attrs()
        attrs["optimizer_meta"] = opt_meta
        attrs["reward_scaler_meta"] = scaler_meta
        attrs["model_keys"] = list(model_state)
        self.checkpoints.save(
            version,
            {
                "model": {k: v.detach().cpu().numpy() for k, v in model_state.items()},
                "optimizer": opt_arrays,
                "reward_scaler": scaler_arrays,
                "rng": {"torch": torch_rng_state()},
            },
            attrs,
        )
        # Past versions in the opponent pool stay: workers load them to play against.
        self.checkpoints.prune(
            self.train_cfg.keep_last, self.train_cfg.milestone_every, keep=self.pool.versions
        )
        if self.slimmer is not None:
            self.slimmer.kick()
        self.last_checkpoint = version
        self.run.update_meta(latest_version=version, samples=self.counters.samples)
        return version

    def restore(self) -> int:
        """Load the last good checkpoint (falling back past corrupt ones with a warning)."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CheckpointFallbackWarning)
            ckpt = self.checkpoints.load()
        for w in caught:
            self.note(f"warning: {w.message}")
        attrs = ckpt.attrs
        self.check_compatible(attrs, ckpt.version)
        state = {k: torch.from_numpy(np.array(ckpt.arrays["model"][k])) for k in attrs["model_keys"]}
        self.model.load_state_dict(state)
        self.learner.load_state_dict(unflatten_state(ckpt.arrays["optimizer"], attrs["optimizer_meta"]))
        scalers = unflatten_state(ckpt.arrays["reward_scaler"], attrs["reward_scaler_meta"])
        if len(scalers) == len(self.reward_scalers):
            for scaler, sd in zip(self.reward_scalers, scalers, strict=True):
                scaler.load_state_dict(sd)
        else:  # a different worker count: every scaler starts from the mean statistics
            for scaler in self.reward_scalers:
                scaler.load_state_dict(
                    {**scalers[0], "returns": torch.zeros(self.agents_per_worker, dtype=torch.float64)}
                )
        self.counters = Counters(**attrs["counters"])
        self.pool.load_state_dict(attrs["opponent_pool"])
        self.generator.set_state(torch.tensor(attrs["generator_state"], dtype=torch.uint8))
        set_torch_rng_state(ckpt.arrays["rng"]["torch"])
        discarded = self.checkpoints.discard_after(ckpt.version)
        if discarded:
            self.note(f"discarded unreadable checkpoints after v{ckpt.version}: {discarded}")
        removed = self.metrics_log.truncate_after(self.counters.iteration)
        if removed:
            self.note(f"dropped {removed} metric rows written after checkpoint v{ckpt.version}")
        self.last_checkpoint = ckpt.version
        return ckpt.version

    def check_compatible(self, attrs: dict[str, Any], version: int) -> None:
        have = int(attrs.get("schema_version", -1))
        want = self.schema.version
        if have != want:
            raise SchemaMismatch(
                f"checkpoint v{version} was written with observation schema v{have}, the recipe asks for v{want}; "
                f"bridge them with `fivectl surgery add-obs --from v{have} --to v{want}`"
            )
        if attrs.get("model_config") != to_dict(self.recipe.model):
            diffs = [
                f"{k}: {attrs['model_config'].get(k)!r} -> {v!r}"
                for k, v in to_dict(self.recipe.model).items()
                if attrs.get("model_config", {}).get(k) != v
            ]
            raise SchemaMismatch(
                f"checkpoint v{version} was written with another model config ({'; '.join(diffs)}); "
                "change a trained model with `fivectl surgery`"
            )

    # ---- the loop ----------------------------------------------------------------------------------------------

    def note(self, text: str) -> None:
        if getattr(self, "view", None) is not None:
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
        wanted = self.train_cfg.batch_windows * self.train_cfg.minibatches
        return max(1, math.ceil(wanted / windows_per_fragment))

    def run_loop(self) -> dict[str, Any]:
        self.view = LiveView(f"fivectl train {self.run.path}") if self.opts.live else None
        # Leftovers of a crash (a half-staged checkpoint, an unpublished rollout file) are never read: remove them.
        self.checkpoints.delete_staging()
        remove_partial_rollouts(self.run.rollouts_path)
        resumed_from = None
        if self.opts.resume and self.checkpoints.latest() is not None:
            resumed_from = self.restore()
        elif self.opts.resume:
            self.note("no checkpoint yet: starting from scratch")
        if self.last_checkpoint is None:
            self.save_checkpoint()  # version 0: a run always has a checkpoint to resume or evaluate
        shared = self.n_workers > 0
        warm_up_game(self.recipe, self.schema)
        params = ParameterStore.for_model(
            self.model.cpu() if self.device.type != "cpu" else self.model, shared
        )
        self.model.to(self.device)
        self.publish(params)
        source = (
            ProcessSource(
                self.recipe,
                self.schema,
                params,
                self.train_cfg.seed,
                self.n_workers,
                slots_per_worker=self.train_cfg.slots_per_worker,
                heartbeat_timeout_s=self.opts.heartbeat_timeout_s,
                run_dir=self.run.path,
            )
            if shared
            else SerialSource(self.recipe, self.schema, params, self.train_cfg.seed, run_dir=self.run.path)
        )
        rollouts = RolloutWriter(
            self.run.rollouts_path,
            self.schema,
            prefix=f"v{self.counters.version:08d}",
            keep_bytes=int(self.train_cfg.rollout_keep_gb * 1e9),
        )
        self.evaluator = PeriodicEvaluator(
            self.run.path, self.recipe.eval.every_versions, self.recipe.eval.games
        )
        # Ctrl-C and SIGTERM (schedulers, `timeout`): finish the step, write a checkpoint, exit cleanly.
        old_handlers = {sig: signal.signal(sig, self.request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        start = time.monotonic()
        wall_at_start = self.counters.wall_seconds
        try:
            with self.view if self.view is not None else _nullcontext():
                if resumed_from is not None:
                    self.note(
                        f"resumed from checkpoint v{resumed_from} (iteration {self.counters.iteration})"
                    )
                while not self._should_stop(start):
                    row = self.iteration(source, params, rollouts)
                    self.counters.wall_seconds = wall_at_start + time.monotonic() - start
                    if row is None:
                        continue
                    self.log_metrics(row)
                    if self.view is not None:
                        self.view.update(row)
                    # Both may write a checkpoint; save_checkpoint first writes the buffered metrics rows, so a
                    # kill -9 in between never leaves a checkpoint ahead of the metrics (workers see a new pool
                    # member with the next published version).
                    self.grow_pool()
                    self.maybe_evaluate()
                    if (
                        self.counters.version % self.train_cfg.checkpoint_every == 0
                        and self.counters.version != self.last_checkpoint
                    ):
                        self.save_checkpoint()
                        self.note(f"checkpoint v{self.counters.version}")
                if self.counters.version != self.last_checkpoint:
                    self.save_checkpoint()
                    self.note(f"checkpoint v{self.counters.version}")
        finally:
            for sig, handler in old_handlers.items():
                signal.signal(sig, handler)
            source.close()
            if self.slimmer is not None:
                self.slimmer.close()
            self.evaluator.close(wait_s=120.0 if self.stop_reason != "interrupted" else 0.0)
            try:
                rollouts.close()
            finally:
                try:
                    self.flush_metrics()
                finally:
                    self.metrics_log.close()
                    params.close(unlink=True)
        return {
            "run": str(self.run.path),
            "stop_reason": self.stop_reason,
            "version": self.counters.version,
            "checkpoint": self.last_checkpoint,
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
        pool = (np.array(self.pool.versions, dtype=np.int64), self.pool.probabilities())
        params.publish(
            self.model,
            self.counters.version,
            pool=pool,
            team_spirit=hp.team_spirit,
            bot_fraction=hp.bot_fraction,
            samples=float(self.counters.samples),
        )

    def hyperparameters(self):
        progress = Progress(samples=self.counters.samples, versions=self.counters.version)
        return hyperparameters_at(self.recipe, progress, self.counters.warmup_end_version)

    # ---- one iteration -----------------------------------------------------------------------------------------

    def iteration(self, source, params: ParameterStore, rollouts: RolloutWriter) -> dict[str, Any] | None:
        tic = time.perf_counter()
        for event in source.check_health():
            self.note(f"worker {event.worker_id} {event.kind}: {event.detail}")
        fragments, staleness, received, t_copy = [], [], 0, 0.0
        want = self.fragments_per_iteration()
        while len(fragments) < want and not self._stop_requested:
            got = source.get(timeout=1.0)
            if got is None:
                for event in source.check_health():
                    self.note(f"worker {event.worker_id} {event.kind}: {event.detail}")
                continue
            slot, views = got
            version = int(views["header"][0])
            worker = int(views["header"][1])
            lag = self.counters.version - version
            received += 1
            self.counters.samples_produced += int(views["train"].sum())
            if self.train_cfg.staleness_policy == "drop" and lag > self.train_cfg.max_staleness:
                self.counters.fragments_dropped += 1
                source.release(slot)
                continue
            t_copy0 = time.perf_counter()
            fragment = {k: np.array(v, copy=True) for k, v in views.items()}
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
        batch = FragmentBatch_from(fragments, self.reward_scalers, hp.gamma, self.train_cfg.scale_rewards)
        trained_only = keep_trained_teams(batch, self.team_size)
        if trained_only.columns // self.team_size >= self.train_cfg.minibatches:
            batch = trained_only
        t_learn0 = time.perf_counter()
        learn = self.learner.train_iteration(batch, hp)
        t_learn = time.perf_counter() - t_learn0

        trained = int(sum(f["train"].sum() for _, f in fragments))
        self.counters.iteration += 1
        self.record_pool_results([f for _, f in fragments])
        self.counters.samples += trained
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
        row = self.metrics_row(fragments, staleness, learn, source, elapsed, t_wait - t_copy, t_learn)
        row["seconds_copy"] = t_copy
        return row

    def maybe_evaluate(self) -> None:
        """Periodic TrueSkill of the new version in a separate process (recipe ``eval.every_versions``)."""
        version = self.counters.version
        if not self.evaluator.due(version) or self.evaluator.busy():
            return
        if version != self.last_checkpoint:
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
                self.pool.record_results(f["opponent"][ended], won)

    def grow_pool(self) -> None:
        """Every ``selfplay.add_every`` versions the current one joins the pool; it needs a checkpoint to be
        loadable by the workers."""
        version = self.counters.version
        if version > 0 and self.pool.maybe_add(version, version):
            if version != self.last_checkpoint:
                self.save_checkpoint()
                self.note(f"checkpoint v{version} (joined the opponent pool)")

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

    def metrics_row(self, fragments, staleness, learn, source, elapsed, t_wait, t_learn) -> dict[str, Any]:
        c = self.counters
        frs = [f for _, f in fragments]
        finished = np.concatenate([f["game_seconds"][f["game_seconds"] > 0] for f in frs])
        winners = np.concatenate([f["winner"].ravel() for f in frs])
        ended = winners[winners >= 0]
        draws = int((np.concatenate([f["game_seconds"].ravel() for f in frs]) > 0).sum()) - ended.size
        c.games += int(finished.size)
        stats = source.stats()
        row: dict[str, Any] = {
            "iteration": c.iteration,
            "version": c.version,
            "samples": c.samples,
            "wall_seconds": round(c.wall_seconds, 3),
            "samples_per_s": sum(int(f["train"].sum()) for f in frs) / max(elapsed, 1e-9),
            "staleness_mean": float(np.mean(staleness)),
            "staleness_max": int(np.max(staleness)),
            "sample_reuse": c.samples_consumed / max(c.samples_produced, 1),
            "fragments_dropped": c.fragments_dropped,
            "games": c.games,
            "game_seconds": float(finished.mean()) if finished.size else None,
            "win_rate": float((ended == 0).mean()) if ended.size else None,
            "bot_win_rate_recent": float(np.mean(self.bot_results)) if self.bot_results else None,
            "draws": max(draws, 0),
            # Zero-sum rewards average to 0 over both teams: their magnitude is what tells.
            "reward_abs_mean": float(np.mean([np.abs(f["reward"]).mean() for f in frs])),
            "invalid_actions_per_step": float(np.mean([f["invalid_actions"].mean() for f in frs])),
            "workers_alive": stats.workers_alive,
            "fragments_in_flight": stats.fragments_in_flight,
            "seconds_wait": t_wait,
            "seconds_learn": t_learn,
            "seconds_sim_total": stats.seconds_sim,
            "seconds_infer_total": stats.seconds_infer,
            "lr": learn.get("learning_rate"),
        }
        rating = self.evaluator.latest_rating() if self.evaluator.enabled else None
        if rating is not None:
            row.update(
                trueskill_mu=rating["mu"],
                trueskill_sigma=rating["sigma"],
                trueskill_version=rating["version"],
            )
        for key, value in self.pool.metrics().items():
            row[key] = None if isinstance(value, float) and math.isnan(value) else value
        for key in (
            "policy_loss",
            "value_loss",
            "entropy",
            "approx_kl",
            "clip_fraction",
            "dual_clip_fraction",
            "explained_variance",
            "aux_loss",
            "aux_win",
            "aux_networth_rank",
            "aux_objectives",
            "grad_norm",
            "optimizer_clip_fraction",
            "gamma",
            "entropy_coef",
            "return_mean",
        ):
            if key in learn:
                row[key] = learn[key]
        row.update({key: value for key, value in learn.items() if key.startswith("entropy_") and key != "entropy_coef"})
        # Reward by component (weighted, before time decay): where the agents' reward comes from.
        earned = np.mean(
            [
                weighted_components(f["components"], self.recipe.reward, np.zeros(f["components"].shape[0]))
                .reshape(-1, len(REWARD_COMPONENTS))
                .mean(axis=0)
                for f in frs
            ],
            axis=0,
        )
        for name, value in zip(REWARD_COMPONENTS, earned, strict=True):
            row[f"reward_{name}"] = float(value)
        return row


def per_step_arrays(fragment: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The [T, ...] arrays of a fragment (observations, actions, rewards, ...): what rollout files keep."""
    steps = fragment["reward"].shape[0]
    return {
        k: v
        for k, v in fragment.items()
        if v.ndim >= 1 and v.shape[0] == steps and k not in ("h_win", "c_win")
    }


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def FragmentBatch_from(fragments, scalers: list[RewardScaler], gamma: float, scale: bool) -> FragmentBatch:
    """Fragments (numpy, from slots) -> one learner batch; rewards scaled by each worker's running return std."""
    parts = []
    for worker, f in fragments:
        rewards = torch.from_numpy(f["reward"])
        dones = torch.from_numpy(f["done"])
        if scale:
            scaler = scalers[min(worker, len(scalers) - 1)]
            rewards = scaler(rewards, dones, gamma)
        obs = {k[4:]: torch.from_numpy(v) for k, v in f.items() if k.startswith("obs.")}
        parts.append(
            FragmentBatch(
                obs=obs,
                actions=torch.from_numpy(f["actions"]).long(),
                logprobs=torch.from_numpy(f["logprob"]),
                values=torch.from_numpy(f["value"]),
                rewards=rewards.float(),
                dones=dones,
                first=torch.from_numpy(f["first"]),
                last_values=torch.from_numpy(f["last_value"]),
                window_states=(
                    torch.from_numpy(f["h_win"]).unsqueeze(1),
                    torch.from_numpy(f["c_win"]).unsqueeze(1),
                ),
                outcomes=torch.from_numpy(f["outcome"]),
                last_win_probs=torch.from_numpy(f["last_win_prob"]),
                mask=torch.from_numpy(f["train"]).float(),
                networth=torch.from_numpy(f["networth"]),
                objective_events=_optional_tensor(f, "objective_events"),
                last_networth_rank=torch.from_numpy(f["last_networth_rank"]),
                last_objectives=_optional_tensor(f, "last_objectives"),
            )
        )
    if len(parts) == 1:
        return parts[0]
    from fivectl.rl.learner import concat_fragments

    return concat_fragments(parts)


def _optional_tensor(fragment: dict[str, np.ndarray], key: str) -> torch.Tensor | None:
    return torch.from_numpy(fragment[key]) if key in fragment else None


def train_run(opts: TrainOptions) -> dict[str, Any]:
    # One torch thread per process: workers and learner share the cores, and a second thread per process
    # slowed torch 3.3x here whenever the other core was busy.
    torch.set_num_threads(1)
    run, recipe = open_or_create_run(opts)
    trainer = Trainer(run, recipe, opts)
    try:
        return trainer.run_loop()
    except OSError as e:
        raise RunFailed(
            f"{run.path}: {e.strerror or e}{(': ' + str(e.filename)) if e.filename else ''}"
        ) from e
