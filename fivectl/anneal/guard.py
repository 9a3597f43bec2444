"""The anneal's guard: rate a version with TrueSkill under the new rules, in its own process (paper B, J).

The version plays the run's fixed references as ``fivectl evaluate trueskill`` would (``evaluate/run_eval.py``),
but every game runs the change (fraction 1) and the ratings go to a league of their own per change,
``RUN/anneal/CHANGE/league``, so the run's league keeps rating the game the run was trained on. The baseline the guard compares against is the
rating the run's league gave at the start of the anneal (``fivectl anneal start`` records it).
"""

from __future__ import annotations

import json
import multiprocessing as mp
from pathlib import Path
from typing import Any

from fivectl.errors import FivectlError


def guard_league_path(run_dir: Path, change: str) -> Path:
    """The league of the guard's ratings under ``change``."""
    return Path(run_dir) / "anneal" / change / "league"


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
    """``{"mu", "sigma"}`` of ``version`` in a league folder, once it has played games; else None."""
    try:
        data = json.loads((Path(league_dir) / "league.json").read_text())
    except (OSError, ValueError):
        return None
    name = f"v{int(version)}"
    played = any(name in (g.get("a"), g.get("b")) for g in data.get("games", []))
    for agent in data.get("agents", []):
        if isinstance(agent, dict) and agent.get("name") == name and played:
            return {"mu": float(agent["mu"]), "sigma": float(agent["sigma"])}
    return None


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
