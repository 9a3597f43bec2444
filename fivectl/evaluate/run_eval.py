"""Rate a run's checkpoints with TrueSkill against fixed references (``fivectl evaluate trueskill``, paper J).

Games are played by :class:`MatchPlayer` with the run's own game section: agents are loaded once and kept, a
calibration round's matches share one batch of games, and with ``workers > 1`` large batches are spread over
processes. The league (ratings and every game) lives in the run's ``league/`` folder, so evaluation accumulates
over calls and over training.
"""

from __future__ import annotations

import concurrent.futures as cf
import math
import multiprocessing as mp
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fivectl.config import GameConfig, Recipe
from fivectl.config.loader import to_dict
from fivectl.errors import BadInput, SchemaMismatch
from fivectl.evaluate import policy_agent  # noqa: F401 - registers RUN_DIR@VERSION agent specs
from fivectl.evaluate.league import GameProgress, League, version_name
from fivectl.evaluate.match import (
    AgentPool,
    MatchResult,
    Pairing,
    env_with_change,
    merge_results,
    play_matches,
)
from fivectl.schema.spec import ObsSchema
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


MIN_GAMES_PER_PROCESS = 32
"""A batch is split over processes only if each gets at least this many games. Below that a step costs mostly
the fixed overhead of each agent's action call (a policy's forward pass costs little more for 40 games than for
one), so a split saves little and pays for a second copy of every agent."""

Match = tuple[str, str, int, int]
"""(agent A spec, agent B spec, games, seed): one match, as the league's ``play_fn`` receives it."""

_WORKER_POOL: AgentPool | None = None
"""Agents of this worker process, kept across jobs (a checkpoint is loaded once per process)."""


def use_one_torch_thread() -> None:
    """Evaluation runs small batches (one forward pass per game step), where torch's extra threads only spin
    and slow everything down (benchmarks/RESULTS.md, "team frame, restore mask, faster evaluation", 2026-11-23).
    Parallelism comes from processes
    (``--workers``) instead."""
    import torch

    torch.set_num_threads(1)


def _init_worker() -> None:
    use_one_torch_thread()


def play_job(
    game: dict, matches: list[Match], batch: int, change: str | None = None, scripted_schema: str | None = None
) -> list[dict]:
    """Play ``matches`` in one batch in this process (a worker's job; plain data in and out: the schema as JSON);
    one ``MatchResult.to_dict()`` per match."""
    from fivectl.config.loader import build

    global _WORKER_POOL
    _WORKER_POOL = _WORKER_POOL or AgentPool()
    errors: list[str] = []
    schema = ObsSchema.from_json(scripted_schema) if scripted_schema else None
    results = _play_group(build(GameConfig, game, errors), matches, batch, _WORKER_POOL, change, schema)
    return [r.to_dict() for r in results]


def _play_group(
    game: GameConfig,
    matches: list[Match],
    batch: int,
    pool: AgentPool,
    change: str | None = None,
    scripted_schema: ObsSchema | None = None,
) -> list[MatchResult]:
    pairings = [Pairing(a, b, games) for a, b, games, _ in matches]
    seed = group_seed([m[3] for m in matches])
    return play_matches(
        pairings, game, seed=seed, batch=batch, pool=pool, make_env=env_with_change(change),
        scripted_schema=scripted_schema,
    )  # fmt: skip


def group_seed(seeds: list[int]) -> int:
    """The game seed of a batch of matches: the match's own seed when it plays alone, else one drawn from all."""
    if len(seeds) == 1:
        return int(seeds[0])
    return int(np.random.SeedSequence([int(s) for s in seeds]).generate_state(1)[0])


Piece = tuple[int, int, Match]
"""(index of the match, index of the chunk within it, the games to play): a part of a match given to a process."""


def split_matches(matches: list[Match], parts: int) -> list[list[Piece]]:
    """Spread matches over ``parts`` processes, balanced by games, keeping whole matches together where possible
    (each process then runs fewer distinct agents). A match larger than a fair share is cut into chunks (seeded
    ``seed * 1000 + chunk``) first."""
    share = math.ceil(sum(m[2] for m in matches) / parts)
    pieces: list[Piece] = []
    for i, (a, b, games, seed) in enumerate(matches):
        chunks = math.ceil(games / share)
        sizes = [games // chunks + (c < games % chunks) for c in range(chunks)]
        pieces += [(i, c, (a, b, n, seed if chunks == 1 else seed * 1000 + c)) for c, n in enumerate(sizes)]
    groups: list[list[Piece]] = [[] for _ in range(parts)]
    load = [0] * parts
    for piece in sorted(pieces, key=lambda p: -p[2][2]):  # largest first onto the least loaded process
        j = load.index(min(load))
        groups[j].append(piece)
        load[j] += piece[2][2]
    return [sorted(g) for g in groups if g]  # match order within a process: deterministic


@dataclass
class MatchPlayer:
    """``play_fn`` for the league: the run's game; agents kept across matches.

    A match plays in this process as one batch. :meth:`play_many` plays independent matches together: in one
    batch here, or, with ``workers > 1`` and enough games, spread over worker processes.
    """

    game: GameConfig
    workers: int = 1
    batch: int = 256
    change: str | None = None
    """A change of the game every game runs (``fivectl anneal``), or None."""
    scripted_schema: ObsSchema | None = None
    """The run's schema, for matches of scripted agents only (the actions the run's game has: a change may need
    one that the numbered schema lacks)."""
    _pool: cf.ProcessPoolExecutor | None = None
    _agents: AgentPool = field(default_factory=AgentPool)

    def __call__(self, a: str, b: str, games: int, seed: int) -> list[int]:
        return self.play_many([(a, b, games, seed)])[0]

    def play_many(self, matches: list[Match]) -> list[list[int]]:
        """Outcomes of each match, from its A's side (see :meth:`results`)."""
        return [r.outcomes for r in self.results(matches)]

    def results(self, matches: list[Match]) -> list[MatchResult]:
        """Play independent matches (no one waits for another's result) and return one merged result each."""
        matches = [(a, b, int(games), int(seed)) for a, b, games, seed in matches]
        parts = min(self.workers, sum(m[2] for m in matches) // MIN_GAMES_PER_PROCESS)
        if parts <= 1:
            return _play_group(
                self.game, matches, self.batch, self._agents, self.change, self.scripted_schema
            )
        groups = split_matches(matches, parts)
        jobs = [
            self._executor().submit(
                play_job, to_dict(self.game), [m for *_, m in g], self.batch, self.change,
                self.scripted_schema.to_json() if self.scripted_schema else None,
            )  # fmt: skip
            for g in groups
        ]
        chunks: list[dict[int, MatchResult]] = [{} for _ in matches]
        for group, job in zip(groups, jobs, strict=True):
            for (i, c, _), result in zip(group, job.result(), strict=True):
                chunks[i][c] = MatchResult.from_dict(result)
        return [merge_results([by_chunk[c] for c in sorted(by_chunk)]) for by_chunk in chunks]

    def _executor(self) -> cf.ProcessPoolExecutor:
        if self._pool is None:
            self._pool = cf.ProcessPoolExecutor(
                self.workers, mp_context=mp.get_context("spawn"), initializer=_init_worker
            )
        return self._pool

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
                f"bridge them with `fivectl surgery add-obs RUN --schema {want} --out NEW_RUN`"
            )


def run_game_change(recipe: Recipe) -> str | None:
    """The change the run's game runs in every game: the last one kept by ``fivectl anneal stop --keep``."""
    return recipe.anneal.kept[-1] if recipe.anneal.kept else None


def evaluate_run(
    run_dir: Path,
    versions: str = "latest",
    games: int | None = None,
    workers: int = 1,
    seed: int = 0,
    change: str | None = None,
    league_path: Path | None = None,
    recipe: Recipe | None = None,
    on_game: GameProgress | None = None,
) -> tuple[League, list[int]]:
    """Rate ``versions`` of a run in its league (references are calibrated first if needed); returns the league
    and the versions rated. A version's matches depend on each other's results, so ``workers`` only helps the
    calibration rounds and matches of at least ``2 * MIN_GAMES_PER_PROCESS`` games. ``change``/``league_path``:
    rate them in another league under a change of the game that every game runs (the anneal's guard); by default
    the run's league and game. ``recipe``: the run's recipe as it is about to be saved (default: as saved).
    ``on_game(done, total)``: told of the games played, calibration included (``league.GameProgress``)."""
    run = RunDir.open(run_dir)
    recipe = recipe or run.load_recipe()
    store = CheckpointStore(run.checkpoints_path)
    chosen = parse_versions(versions, store.versions())
    check_checkpoint_schemas(store, chosen, recipe)
    player = MatchPlayer(
        recipe.game,
        workers,
        change=change or run_game_change(recipe),
        scripted_schema=run.obs_schema(recipe.model.schema_version),
    )
    league_path = league_path or run.league_path
    try:
        with League.session(league_path, recipe.eval, run_spec=str(run.path), seed=seed) as league:
            league.on_game = on_game
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


def evaluate_run_job(run_dir: str, versions: str, games: int | None, seed: int = 0) -> dict:
    """:func:`evaluate_run` as a worker process's job (plain data out): ``league.summary()`` plus ``rated``,
    ``seconds`` and ``cpu_seconds`` (spent calibrating references and rating versions)."""
    _init_worker()
    league, rated = evaluate_run(Path(run_dir), versions=versions, games=games, seed=seed)
    return {
        **league.summary(),
        "rated": rated,
        "seconds": dict(league.seconds),
        "cpu_seconds": dict(league.cpu_seconds),
    }
