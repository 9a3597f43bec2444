"""What the learner logs each iteration, and the buffer that writes those rows to the run's metrics log."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fivectl.config.reward import RewardConfig
from fivectl.rl.reward import weighted_components
from fivectl.runtime.run_state import Counters
from fivectl.sim import REWARD_COMPONENTS
from fivectl.store.metrics import MetricsLog

METRICS_FLUSH_S = 10.0  # longest a metrics row waits in memory (between checkpoints) before it is written

LEARN_KEYS = (
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
)


class BufferedMetrics:
    """Rows not yet on disk. They are written before each checkpoint (so a checkpoint is never ahead of the
    metrics) or after METRICS_FLUSH_S: one file per row would cost the learner a file and an fsync each.
    A kill loses only rows after the last checkpoint, which resume drops and re-logs anyway."""

    def __init__(self, metrics_dir: Path, tensorboard_dir: Path):
        self.log = MetricsLog(metrics_dir, tensorboard_dir=tensorboard_dir)
        self.pending: list[dict[str, Any]] = []
        self.pending_since = time.monotonic()

    def append(self, row: dict[str, Any]) -> None:
        if not self.pending:
            self.pending_since = time.monotonic()
        self.pending.append(row)
        if time.monotonic() - self.pending_since >= METRICS_FLUSH_S:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.log.append(self.pending)
            self.pending = []

    def truncate_after(self, iteration: int) -> int:
        """Drop rows written after ``iteration`` (a resumed run logs them again); how many were dropped."""
        return self.log.truncate_after(iteration)

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self.log.close()


@dataclass
class IterationTimes:
    elapsed: float  # the whole iteration
    wait: float  # waiting for fragments, copies excluded
    learn: float  # the PPO update
    copy: float  # copying fragments out of their slots


def games_finished(fragments: Iterable[dict[str, np.ndarray]]) -> int:
    """Games whose result counts (``game_seconds`` > 0 at their last step) in these fragments."""
    return int(sum(int((f["game_seconds"] > 0).sum()) for f in fragments))


def metrics_row(
    *,
    counters: Counters,
    fragments: list[dict[str, np.ndarray]],
    staleness: list[int],
    learn: dict[str, Any],
    source_stats: Any,
    times: IterationTimes,
    bot_results: Iterable[float],
    rating: dict | None,
    pool_metrics: dict[str, float],
    reward_cfg: RewardConfig,
    off_lane: float | None = None,
    bot_results_by_level: dict[str, Iterable[float]] | None = None,
) -> dict[str, Any]:
    """One metrics row for an iteration trained on ``fragments`` (counters already advanced)."""
    c = counters
    finished = np.concatenate([f["game_seconds"][f["game_seconds"] > 0] for f in fragments])
    winners = np.concatenate([f["winner"].ravel() for f in fragments])
    ended = winners[winners >= 0]
    draws = int((np.concatenate([f["game_seconds"].ravel() for f in fragments]) > 0).sum()) - ended.size
    bot_results = list(bot_results)
    row: dict[str, Any] = {
        "iteration": c.iteration,
        "version": c.version,
        "samples": c.samples,
        "wall_seconds": round(c.wall_seconds, 3),
        "samples_per_s": sum(int(f["train"].sum()) for f in fragments) / max(times.elapsed, 1e-9),
        "staleness_mean": float(np.mean(staleness)),
        "staleness_max": int(np.max(staleness)),
        "sample_reuse": c.samples_consumed / max(c.samples_produced, 1),
        "fragments_dropped": c.fragments_dropped,
        "games": c.games,
        "game_seconds": float(finished.mean()) if finished.size else None,
        "win_rate": float((ended == 0).mean()) if ended.size else None,
        "bot_win_rate_recent": float(np.mean(bot_results)) if bot_results else None,
        "draws": max(draws, 0),
        # Zero-sum rewards average to 0 over both teams: their magnitude is what tells.
        "reward_abs_mean": float(np.mean([np.abs(f["reward"]).mean() for f in fragments])),
        "invalid_actions_per_step": float(np.mean([f["invalid_actions"].mean() for f in fragments])),
        "workers_alive": source_stats.workers_alive,
        "fragments_in_flight": source_stats.fragments_in_flight,
        "seconds_wait": times.wait,
        "seconds_learn": times.learn,
        "seconds_sim_total": source_stats.seconds_sim,
        "seconds_infer_total": source_stats.seconds_infer,
        "lr": learn.get("learning_rate"),
    }
    if rating is not None:
        row.update(
            trueskill_mu=rating["mu"], trueskill_sigma=rating["sigma"], trueskill_version=rating["version"]
        )
    if bot_results_by_level and len(bot_results_by_level) > 1:  # selfplay.bots mixes levels: each its own rate
        for level, results in sorted(bot_results_by_level.items()):
            results = list(results)
            row[f"bot_win_rate_recent_{level}"] = float(np.mean(results)) if results else None
    for key, value in pool_metrics.items():
        row[key] = None if isinstance(value, float) and math.isnan(value) else value
    row.update({key: learn[key] for key in LEARN_KEYS if key in learn})
    row.update(
        {key: value for key, value in learn.items() if key.startswith("entropy_") and key != "entropy_coef"}
    )
    row.update(getattr(source_stats, "inference", None) or {})  # acting in the inference server only
    row.update(reward_by_component(fragments, reward_cfg, off_lane))
    row["seconds_copy"] = times.copy
    return row


def reward_by_component(
    fragments: list[dict[str, np.ndarray]], reward_cfg: RewardConfig, off_lane: float | None = None
) -> dict[str, float]:
    """Reward by component (weighted, before time decay): where the agents' reward comes from. ``off_lane``:
    the lane penalty's weight at this iteration (a schedule; ``None``: its start)."""
    earned = np.mean(
        [
            weighted_components(f["components"], reward_cfg, np.zeros(f["components"].shape[0]), off_lane)
            .reshape(-1, len(REWARD_COMPONENTS))
            .mean(axis=0)
            for f in fragments
        ],
        axis=0,
    )
    return {f"reward_{name}": float(value) for name, value in zip(REWARD_COMPONENTS, earned, strict=True)}
