"""Rate a run's checkpoints with TrueSkill against fixed references (``fivectl evaluate trueskill``, paper J).

Games are played by :func:`fivectl.evaluate.match.play_match` with the run's own game section; with
``workers > 1`` each match's games are split across processes. The league (ratings and every game) lives in the
run's ``league/`` folder, so evaluation accumulates over calls and over training.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fivectl.config import GameConfig, Recipe
from fivectl.errors import BadInput, SchemaMismatch
from fivectl.evaluate import policy_agent  # noqa: F401 - registers RUN_DIR@VERSION agent specs
from fivectl.evaluate.league import League, version_name
from fivectl.evaluate.match import play_match
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.rundir import RunDir

PlayFn = Callable[[str, str, int, int], list[int]]


def parse_versions(text: str, available: list[int]) -> list[int]:
    """``latest``, ``all`` or a comma list like ``10,20,30`` (each must be a checkpoint of the run)."""
    if not available:
        raise BadInput("the run has no checkpoint yet: train it first")
    if text == "latest":
        return [available[-1]]
    if text == "all":
        return list(available)
    chosen = []
    for part in text.split(","):
        part = part.strip().lstrip("v")
        try:
            version = int(part)
        except ValueError:
            raise BadInput(f"--versions: expected latest, all or a list like 10,20, got {text!r}") from None
        if version not in available:
            shown = ", ".join(map(str, available[-10:]))
            raise BadInput(f"--versions: the run has no checkpoint v{version} (available: {shown})")
        chosen.append(version)
    return chosen


def _play_chunk(a: str, b: str, game: dict, games: int, seed: int) -> list[int]:
    from fivectl.config.loader import build

    errors: list[str] = []
    return play_match(a, b, build(GameConfig, game, errors), games, seed).outcomes


@dataclass
class MatchPlayer:
    """``play_fn`` for the league: the run's game, games split over ``workers`` processes."""

    game: GameConfig
    workers: int = 1
    _pool: cf.ProcessPoolExecutor | None = None

    def __call__(self, a: str, b: str, games: int, seed: int) -> list[int]:
        if self.workers <= 1 or games < 2 * self.workers:
            return play_match(a, b, self.game, games, seed).outcomes
        if self._pool is None:
            self._pool = cf.ProcessPoolExecutor(self.workers, mp_context=mp.get_context("spawn"))
        from fivectl.config.loader import to_dict

        sizes = [games // self.workers + (i < games % self.workers) for i in range(self.workers)]
        jobs = [
            self._pool.submit(_play_chunk, a, b, to_dict(self.game), n, seed * 1000 + i)
            for i, n in enumerate(sizes)
            if n
        ]
        return [o for job in jobs for o in job.result()]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None


def check_checkpoint_schemas(store: CheckpointStore, versions: list[int], recipe: Recipe) -> None:
    want = recipe.model.schema_version
    for v in versions:
        have = int(store.load_attrs(v).get("schema_version", -1))
        if have != want:
            raise SchemaMismatch(
                f"checkpoint v{v} reads observation schema v{have}, the run's game encodes v{want}; "
                f"bridge them with `fivectl surgery add-obs --from v{have} --to v{want}`"
            )


def evaluate_run(
    run_dir: Path, versions: str = "latest", games: int | None = None, workers: int = 1, seed: int = 0
) -> tuple[League, list[int]]:
    run = RunDir.open(run_dir)
    recipe = run.load_recipe()
    store = CheckpointStore(run.checkpoints_path)
    chosen = parse_versions(versions, store.versions())
    check_checkpoint_schemas(store, chosen, recipe)
    player = MatchPlayer(recipe.game, workers)
    try:
        with League.session(run.league_path, recipe.eval, run_spec=str(run.path), seed=seed) as league:
            # A pinned version is a reference now: its rating stays fixed, so it is shown, not re-rated.
            chosen = [v for v in chosen if not is_pinned(league, v)]
            if chosen:
                league.evaluate_versions(chosen, player, games=games or recipe.eval.games)
            return league, chosen
    finally:
        player.close()


def is_pinned(league: League, version: int) -> bool:
    agent = league.agents.get(version_name(version))
    return agent is not None and agent.fixed


def pin_version(run_dir: Path, version: int) -> League:
    """Make a rated checkpoint a fixed reference (``fivectl evaluate pin``)."""
    run = RunDir.open(run_dir)
    recipe = run.load_recipe()
    with League.session(run.league_path, recipe.eval, run_spec=str(run.path)) as league:
        league.pin(version_name(version))
        return league
