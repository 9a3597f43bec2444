"""Periodic TrueSkill evaluation during training, in its own process so the learner is not slowed.

Every ``eval.every_versions`` versions the learner checkpoints the version and hands it to one evaluation
process (if the previous one is still busy, that version is skipped). Ratings land in the run's league, where
the learner reads the latest one back for its metrics and live view. ``fivectl train`` hands a
:class:`PeriodicEvaluator` to the learner as its evaluation hook (``runtime/evaluation_hook.py``): the runtime
never imports this feature.
"""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

from fivectl.config import Recipe
from fivectl.errors import FivectlError


def _evaluate(run_dir: str, version: int, games: int) -> None:
    import torch

    torch.set_num_threads(1)
    from fivectl.evaluate.run_eval import evaluate_run

    try:
        evaluate_run(Path(run_dir), versions=str(version), games=games)
    except FivectlError:
        pass  # e.g. the league is busy with a `fivectl evaluate` the user started: the next version will do


class PeriodicEvaluator:
    def __init__(self, run_dir: Path, every_versions: int, games: int):
        self.run_dir = Path(run_dir)
        self.every = every_versions
        self.games = games
        self.ctx = mp.get_context("spawn")
        self.proc = None
        self.submitted: list[int] = []

    @classmethod
    def for_run(cls, run_dir: Path, recipe: Recipe) -> PeriodicEvaluator:
        """The evaluator a recipe's ``[eval]`` section asks for."""
        return cls(run_dir, recipe.eval.every_versions, recipe.eval.games)

    @property
    def enabled(self) -> bool:
        return self.every > 0

    def due(self, version: int) -> bool:
        return self.enabled and version > 0 and version % self.every == 0 and version not in self.submitted

    def busy(self) -> bool:
        return self.proc is not None and self.proc.is_alive()

    def submit(self, version: int) -> bool:
        if self.busy():
            return False
        self.proc = self.ctx.Process(
            target=_evaluate, args=(str(self.run_dir), version, self.games), daemon=True, name="fivectl-eval"
        )
        self.proc.start()
        self.submitted.append(version)
        return True

    def latest_rating(self) -> dict | None:
        """mu/sigma of the newest rated version, read from the run's league (None before the first, or while the
        league cannot be read: the learner's metrics go on without it)."""
        from fivectl.evaluate.league import read_league
        from fivectl.store.rundir import RunDir

        try:
            league = read_league(RunDir.open(self.run_dir).league_path)
        except (OSError, FivectlError):
            return None
        newest = league.newest_version() if league is not None else None
        if newest is None:
            return None
        return {"version": newest.version, "mu": newest.mu, "sigma": newest.sigma}

    def close(self, wait_s: float = 0.0) -> None:
        if self.proc is not None:
            self.proc.join(timeout=wait_s)
            if self.proc.is_alive():
                self.proc.terminate()
                self.proc.join(timeout=5)
