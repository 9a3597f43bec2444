"""The anneal's guard: rate a version with TrueSkill under the new rules, in its own process (paper B, J).

The version plays the run's fixed references as ``fivectl evaluate trueskill`` would (``evaluate/run_eval.py``),
but every game runs the change (fraction 1) and the ratings go to a league of their own per change,
``RUN/anneal/CHANGE/league``, so the run's league keeps rating the game the run was trained on.

The baseline is the start version rated in that league, under the change, by ``fivectl anneal start``, and then
pinned as one of its references. Each later version is thus compared with where the run stood *under the new
rules*: a change that the trained policy must first learn does not read as a drop, and since the start version is
a reference close in skill, the guard's matches against it are the informative ones.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from pathlib import Path
from typing import Any

from fivectl.config import Recipe
from fivectl.errors import FivectlError
from fivectl.store.fsync import fsync_dir


def guard_league_path(run_dir: Path, change: str) -> Path:
    """The league of the guard's ratings under ``change``."""
    return Path(run_dir) / "anneal" / change / "league"


GUARD_CHECKPOINTS = 10
"""Without a cadence in the recipe (``anneal.guard_every``, ``eval.every_versions``, ``train.milestone_every``)
the guard rates every this many checkpoints."""


def guard_cadence(recipe: Recipe) -> tuple[int, str]:
    """Versions between the guard's evaluations, and the recipe setting it comes from (``anneal.guard_every``)."""
    if recipe.anneal.guard_every > 0:
        return recipe.anneal.guard_every, "anneal.guard_every"
    if recipe.eval.every_versions > 0:
        return recipe.eval.every_versions, "eval.every_versions"
    if recipe.train.milestone_every > 0:
        return recipe.train.milestone_every, "train.milestone_every"
    return GUARD_CHECKPOINTS * recipe.train.checkpoint_every, f"{GUARD_CHECKPOINTS} x train.checkpoint_every"


def guard_games(recipe: Recipe) -> int:
    """Games per guard evaluation of a version."""
    return recipe.anneal.guard_games or recipe.eval.games


def baseline_games(recipe: Recipe) -> int:
    """Games the start version plays for the baseline: more than a version's, since every judgement uses it."""
    return recipe.anneal.baseline_games or 2 * guard_games(recipe)


def rate_start_version(run_dir: Path, recipe: Recipe, version: int) -> dict[str, float]:
    """The guard's baseline: ``version`` rated under the change (every game runs it) in a new guard league, then
    pinned there as a reference. A guard league left by an earlier anneal of the change is moved aside, never
    deleted. ``recipe``: the run's recipe with the anneal set (its change, ``[eval]`` and game counts). Returns
    ``{"version", "mu", "sigma", "games"}``."""
    from fivectl.evaluate.league import League, version_name
    from fivectl.evaluate.run_eval import evaluate_run
    from fivectl.store.rundir import RunDir

    change = recipe.anneal.change

    league_dir = guard_league_path(run_dir, change)
    if league_dir.exists():
        n = 1
        while league_dir.with_name(f"league.ended.{n}").exists():
            n += 1
        os.rename(league_dir, league_dir.with_name(f"league.ended.{n}"))
        fsync_dir(league_dir.parent)
    evaluate_run(
        Path(run_dir),
        versions=str(version),
        games=baseline_games(recipe),
        change=change,
        league_path=league_dir,
        recipe=recipe,
    )
    with League.session(league_dir, recipe.eval, run_spec=str(RunDir.open(run_dir).path)) as league:
        rating = league.pin(version_name(version))
        played = league.games_played(version_name(version))
    return {"version": int(version), "mu": float(rating.mu), "sigma": float(rating.sigma), "games": played}


def _rate(run_dir: str, version: int, change: str, games: int) -> None:
    import torch

    torch.set_num_threads(1)
    from fivectl.evaluate.run_eval import evaluate_run

    try:
        evaluate_run(
            Path(run_dir),
            versions=str(version),
            games=games,
            change=change,
            league_path=guard_league_path(Path(run_dir), change),
        )
    except FivectlError as e:
        # the guard league is busy (a user's evaluation of it), the checkpoint went: a later version will do
        raise SystemExit(1) from e


def league_rating(league_dir: Path, version: int) -> dict[str, float] | None:
    """``{"mu", "sigma"}`` of ``version`` in a league folder, once it has played games; else None (also when the
    league cannot be read: the guard then has no result for this version)."""
    from fivectl.evaluate.league import read_league

    try:
        league = read_league(league_dir)
    except (OSError, FivectlError):
        return None
    rating = league.version_rating(version) if league is not None else None
    if rating is None:
        return None
    return {"mu": float(rating.mu), "sigma": float(rating.sigma)}


class GuardEvaluator:
    """Rates one version at a time under the change, in a spawned process; the trainer polls for the result."""

    def __init__(self, run_dir: Path, change: str, games: int):
        self.run_dir = Path(run_dir)
        self.change = change
        self.games = games
        self.ctx = mp.get_context("spawn")
        self.proc: Any = None

    def busy(self) -> bool:
        return self.proc is not None and self.proc.is_alive()

    def submit(self, version: int) -> bool:
        if self.busy():
            return False
        self.proc = self.ctx.Process(
            target=_rate,
            args=(str(self.run_dir), version, self.change, self.games),
            daemon=True,
            name="fivectl-anneal-guard",
        )
        self.proc.start()
        return True

    def result(self, version: int) -> dict[str, float] | None | bool:
        """The rating of ``version`` once its evaluation has ended; None while it runs; False if it ended
        without one (the league was busy, the process died)."""
        if self.busy():
            return None
        if self.proc is None or self.proc.exitcode != 0:
            return False
        rating = league_rating(guard_league_path(self.run_dir, self.change), version)
        return rating if rating is not None else False

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the evaluation under way; True when none is running any more."""
        if self.proc is not None:
            self.proc.join(timeout=timeout_s)
        return not self.busy()

    def close(self, wait_s: float = 0.0) -> None:
        if self.proc is not None:
            self.proc.join(timeout=wait_s)
            if self.proc.is_alive():
                self.proc.terminate()
                self.proc.join(timeout=5)
