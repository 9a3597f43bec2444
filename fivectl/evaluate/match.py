"""Play N games between two agents on the embedded MOBA and summarize them (``fivectl evaluate match``).

Games run batched: ``batch`` game slots step together; each slot plays one game at a time and takes the next game
of the match when its game ends (the environment resets it automatically), so short and long games share the
batch without idling. Game ``i`` puts agent A on team ``i % 2`` (sides alternate); an agent never changes side
within a game, and each agent is told through ``first`` when a slot starts a new game.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from fivectl.config import GameConfig
from fivectl.errors import BadInput, FivectlError
from fivectl.evaluate.agents import Agent, parse_agent, team_agent_index
from fivectl.schema import ObsSchema, load_schema

Z95 = 1.959963984540054
TEAM_STATS = ("kills", "towers_destroyed", "last_hits", "denies")
"""Per-team figures of a finished game that the env reports in ``info`` (each [G, 2]), averaged per side."""

EnvFactory = Callable[[GameConfig, int, int, ObsSchema], Any]
"""(game_cfg, num_games, seed, schema) -> a batched env with the ``MobaEnv`` interface (docs/ARCHITECTURE.md)."""


def wilson_interval(successes: float, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (95% by default); (0, 1) when there are no trials."""
    if trials <= 0:
        return (0.0, 1.0)
    p = successes / trials
    denom = 1.0 + z * z / trials
    center = (p + z * z / (2 * trials)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / trials + z * z / (4.0 * trials * trials))
    return (max(0.0, center - half), min(1.0, center + half))


@dataclass
class MatchResult:
    """Outcome of a match, from agent A's point of view. ``a_win_rate`` counts a draw as half a win."""

    a: str
    b: str
    games: int
    a_wins: int
    b_wins: int
    draws: int
    a_win_rate: float
    a_win_rate_ci95: tuple[float, float]
    mean_game_seconds: float
    a_kills_mean: float
    b_kills_mean: float
    a_towers_mean: float
    b_towers_mean: float
    a_last_hits_mean: float
    b_last_hits_mean: float
    a_denies_mean: float
    b_denies_mean: float
    team0_wins: int
    team1_wins: int
    a_invalid_action_rate: float
    b_invalid_action_rate: float
    seed: int
    wall_seconds: float
    outcomes: list[int] = field(default_factory=list)
    """Per game in match order: 1 A won, -1 B won, 0 draw (game ``i`` had A on team ``i % 2``)."""

    def to_dict(self) -> dict:
        d = asdict(self)
        d["a_win_rate_ci95"] = list(self.a_win_rate_ci95)
        return d


@dataclass
class _Tally:
    """Per-game results, filled as games end (indexed by game number)."""

    games: int
    winner_team: np.ndarray = field(init=False)  # int8: 0/1, -1 draw
    seconds: np.ndarray = field(init=False)
    stats: dict[str, np.ndarray] = field(init=False)  # name -> [games, 2] final figure by team

    def __post_init__(self) -> None:
        self.winner_team = np.full(self.games, -2, dtype=np.int8)
        self.seconds = np.zeros(self.games)
        self.stats = {name: np.zeros((self.games, 2)) for name in TEAM_STATS}


def play_match(
    a: Agent | str,
    b: Agent | str,
    game_cfg: GameConfig,
    games: int,
    seed: int = 0,
    batch: int = 32,
    schema: ObsSchema | None = None,
    progress: Callable[[int, int], None] | None = None,
    make_env: EnvFactory | None = None,
) -> MatchResult:
    """Play ``games`` games of A against B with sides alternated; deterministic for (seed, batch).

    ``schema`` is the observation schema the game encodes (default: the one the agents read, else v1).
    ``progress(done, games)`` is called whenever games end. ``make_env(game_cfg, num_games, seed, schema)``
    builds the batched game (default: the embedded MOBA, ``fivectl.sim.MobaEnv``).
    """
    if games < 1:
        raise BadInput(f"games must be >= 1, got {games}")
    if batch < 1:
        raise BadInput(f"batch must be >= 1, got {batch}")
    agent_a = parse_agent(a) if isinstance(a, str) else a
    agent_b = parse_agent(b) if isinstance(b, str) else b
    schema = schema or load_schema(_schema_version(agent_a, agent_b))
    slots = min(batch, games)
    env = (make_env or _moba_env)(game_cfg, slots, seed, schema)
    agent_a.reset(slots, seed=seed * 2 + 1)
    agent_b.reset(slots, seed=seed * 2 + 2)

    started = time.perf_counter()
    tally, invalid, hero_steps = _run_games(
        env, agent_a, agent_b, games, _step_limit(game_cfg, games, slots), progress
    )
    return _summarize(
        agent_a.spec, agent_b.spec, tally, invalid, hero_steps, seed, time.perf_counter() - started
    )


def _run_games(
    env,
    agent_a: Agent,
    agent_b: Agent,
    games: int,
    step_limit: int,
    progress: Callable[[int, int], None] | None,
) -> tuple[_Tally, np.ndarray, np.ndarray]:
    slots, k = env.num_games, env.team_size
    tally = _Tally(games)
    slot_game = np.arange(slots, dtype=np.int64)  # game number playing in each slot; -1 idle
    invalid = np.zeros(2)  # invalid actions by A, by B
    hero_steps = np.zeros(2)
    next_game, finished = slots, 0
    first = np.ones(slots, dtype=bool)
    obs = env.reset()

    for _ in range(step_limit):
        team_a = (slot_game % 2).astype(np.int64)  # idle slots (-1) map to team 1; their actions are ignored
        team_b = 1 - team_a
        actions = np.zeros((slots, 2 * k, 4), dtype=np.int32)
        rows = np.arange(slots)[:, None]
        actions[rows, team_agent_index(team_a, k)] = agent_a.act(env, obs, team_a, first)
        actions[rows, team_agent_index(team_b, k)] = agent_b.act(env, obs, team_b, first)
        obs, _, done, info = env.step(actions)

        active = slot_game >= 0
        bad = np.asarray(info["invalid_actions"]).reshape(slots, 2, k).sum(axis=2)  # [slots, team]
        invalid += [bad[active, team_a[active]].sum(), bad[active, team_b[active]].sum()]
        hero_steps += k * active.sum()

        ended = np.flatnonzero(done & active)
        if len(ended):
            _record(tally, slot_game[ended], ended, info)
            finished += len(ended)
            taken = ended[: max(0, games - next_game)]
            slot_game[ended] = -1
            slot_game[taken] = np.arange(next_game, next_game + len(taken))
            next_game += len(taken)
            if progress is not None:
                progress(finished, games)
            if finished == games:
                return tally, invalid, hero_steps
        first = np.asarray(done, dtype=bool).copy()
    raise FivectlError(f"match did not finish: {finished}/{games} games ended within {step_limit} steps")


def _record(tally: _Tally, game_ids: np.ndarray, slots: np.ndarray, info: dict) -> None:
    """Store the final outcome of the games that ended in ``slots`` (the info of their last step)."""
    tally.winner_team[game_ids] = np.asarray(info["winner"])[slots]
    tally.seconds[game_ids] = np.asarray(info["game_time"])[slots]
    for name in TEAM_STATS:
        tally.stats[name][game_ids] = np.asarray(info[name])[slots]


def _summarize(
    a: str, b: str, tally: _Tally, invalid: np.ndarray, hero_steps: np.ndarray, seed: int, wall: float
) -> MatchResult:
    games = tally.games
    team_a = np.arange(games) % 2
    a_won = tally.winner_team == team_a
    b_won = tally.winner_team == 1 - team_a
    outcomes = np.where(a_won, 1, np.where(b_won, -1, 0))
    a_wins, b_wins = int(a_won.sum()), int(b_won.sum())
    draws = games - a_wins - b_wins
    score = a_wins + 0.5 * draws
    games_ix = np.arange(games)

    def side_means(name: str) -> tuple[float, float]:
        by_team = tally.stats[name]
        return float(by_team[games_ix, team_a].mean()), float(by_team[games_ix, 1 - team_a].mean())

    kills, towers, last_hits, denies = (side_means(name) for name in TEAM_STATS)
    return MatchResult(
        a=a,
        b=b,
        games=games,
        a_wins=a_wins,
        b_wins=b_wins,
        draws=draws,
        a_win_rate=score / games,
        a_win_rate_ci95=wilson_interval(score, games),
        mean_game_seconds=float(tally.seconds.mean()),
        a_kills_mean=kills[0],
        b_kills_mean=kills[1],
        a_towers_mean=towers[0],
        b_towers_mean=towers[1],
        a_last_hits_mean=last_hits[0],
        b_last_hits_mean=last_hits[1],
        a_denies_mean=denies[0],
        b_denies_mean=denies[1],
        team0_wins=int((tally.winner_team == 0).sum()),
        team1_wins=int((tally.winner_team == 1).sum()),
        a_invalid_action_rate=float(invalid[0] / max(hero_steps[0], 1)),
        b_invalid_action_rate=float(invalid[1] / max(hero_steps[1], 1)),
        seed=seed,
        wall_seconds=wall,
        outcomes=outcomes.tolist(),
    )


def _moba_env(game_cfg: GameConfig, num_games: int, seed: int, schema: ObsSchema):
    from fivectl.sim import MobaEnv  # the compiled game is imported only when a match is played

    return MobaEnv(game_cfg, num_games=num_games, seed=seed, schema=schema)


def _schema_version(a: Agent, b: Agent) -> int:
    wanted = {v for v in (a.schema_version, b.schema_version) if v is not None}
    if len(wanted) > 1:
        raise BadInput(
            f"{a.spec} reads observation schema v{a.schema_version}, {b.spec} reads v{b.schema_version}"
        )
    return wanted.pop() if wanted else 1


def _step_limit(game_cfg: GameConfig, games: int, slots: int) -> int:
    """Enough env steps for every game to reach the time limit, twice over (list-scheduling bound + slack)."""
    per_game = math.ceil(game_cfg.time_limit_s * game_cfg.fps / game_cfg.frameskip) + 2
    return 2 * per_game * (math.ceil(games / slots) + 1)


__all__ = ["MatchResult", "play_match", "wilson_interval"]
