"""Play games between agents on the embedded MOBA and summarize them (``fivectl evaluate match``).

Games run batched: ``batch`` game slots step together; each slot plays one game at a time and takes the next queued
game when its game ends (the environment resets it automatically), so short and long games share the batch without
idling. :func:`play_matches` queues the games of several matches into the same batch: an agent that plays in
several of them (say one checkpoint against three bots) acts once per step for all of its games, so a policy runs
one forward pass per step however many matches it plays. Game ``i`` of a match puts its agent A on team ``i % 2``
(sides alternate); an agent never changes side within a game, and each agent is told through ``first`` when a slot
starts a new game.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fivectl.config import GameConfig
from fivectl.errors import BadInput, FivectlError
from fivectl.evaluate.agents import Agent, act_in, parse_agent, team_agent_index
from fivectl.evaluate.teamplay import TeamPlayTracker, tracks_team_play
from fivectl.schema import ObsSchema, load_schema

if TYPE_CHECKING:
    from fivectl.evaluate.recording import MatchRecording

Z95 = 1.959963984540054
TEAM_STATS = ("kills", "towers_destroyed", "last_hits", "denies", "building_hp_taken")
"""Per-team figures of a finished game that the env reports in ``info`` (each [G, 2]), averaged per side."""
OPTIONAL_TEAM_STATS = ("building_hp_taken",)
"""Figures an env other than the embedded game may leave out of ``info`` (they then average 0)."""

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
    a_building_hp_mean: float = 0.0
    """Enemy building HP taken per game (lost fractions summed, a destroyed building counts 1): what decides a
    game that reaches the time limit once buildings destroyed are equal. 0 in results stored before it existed."""
    b_building_hp_mean: float = 0.0
    a_grouped_kill_share: float | None = None
    """Team play (games of two or more heroes a side, ``teamplay.py``): of A's kills, the share made with two or
    more of A's heroes near the victim, averaged over the games where A killed; None in 1v1 or without kills."""
    b_grouped_kill_share: float | None = None
    a_lanes_covered: float | None = None
    """Team play: the mean number of lanes with at least one of A's living heroes on them."""
    b_lanes_covered: float | None = None
    a_home_share: float | None = None
    """Team play: the share of A's living hero-time spent in its own base (near its fountain)."""
    b_home_share: float | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["a_win_rate_ci95"] = list(self.a_win_rate_ci95)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> MatchResult:
        return cls(**{**d, "a_win_rate_ci95": tuple(d["a_win_rate_ci95"])})


MEANS = (
    "mean_game_seconds", "a_kills_mean", "b_kills_mean", "a_towers_mean", "b_towers_mean", "a_last_hits_mean",
    "b_last_hits_mean", "a_denies_mean", "b_denies_mean", "a_invalid_action_rate", "b_invalid_action_rate",
    "a_building_hp_mean", "b_building_hp_mean",
)  # fmt: skip
"""Per-game averages of a MatchResult: a merged result weighs each part's by its number of games."""


OPTIONAL_MEANS = (
    "a_grouped_kill_share", "b_grouped_kill_share", "a_lanes_covered", "b_lanes_covered", "a_home_share",
    "b_home_share",
)  # fmt: skip
"""Per-game averages that a result may lack (None): merged over the parts that have them."""


def _optional_mean(parts: list[MatchResult], key: str) -> float | None:
    have = [p for p in parts if getattr(p, key) is not None]
    if not have:
        return None
    return sum(getattr(p, key) * p.games for p in have) / sum(p.games for p in have)


def merge_results(parts: list[MatchResult]) -> MatchResult:
    """One result for a match whose games were played in parts (chunks in order: outcomes are concatenated)."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    games = sum(p.games for p in parts)
    counts = {
        k: sum(getattr(p, k) for p in parts)
        for k in ("a_wins", "b_wins", "draws", "team0_wins", "team1_wins")
    }
    means = {k: sum(getattr(p, k) * p.games for p in parts) / games for k in MEANS}
    means.update({k: _optional_mean(parts, k) for k in OPTIONAL_MEANS})
    score = counts["a_wins"] + 0.5 * counts["draws"]
    return replace(
        first,
        games=games,
        **counts,
        **means,
        a_win_rate=score / games,
        a_win_rate_ci95=wilson_interval(score, games),
        wall_seconds=max(p.wall_seconds for p in parts),
        outcomes=[o for p in parts for o in p.outcomes],
    )


@dataclass(frozen=True)
class Pairing:
    """One match to play: ``games`` games of A against B. An agent is a spec string or an :class:`Agent`.

    ``lineups`` (optional) int [games, 2, team_size]: the hero ids of side A and of side B in each game (the
    heroes follow the agent when sides alternate); without it the game draws lineups at random."""

    a: Agent | str
    b: Agent | str
    games: int
    lineups: np.ndarray | None = field(default=None, compare=False)


class AgentPool:
    """Agents built from spec strings, kept across matches so a checkpoint is loaded once, not once per match.

    ``get(spec, copy)``: ``copy`` > 0 gives a separate instance of the same spec (an agent playing itself needs
    one per side: each keeps its own per-game memory).
    """

    def __init__(self) -> None:
        self._agents: dict[tuple[str, int], Agent] = {}

    def get(self, spec: str, copy: int = 0) -> Agent:
        key = (spec.strip(), copy)
        if key not in self._agents:
            self._agents[key] = parse_agent(key[0])
        return self._agents[key]


@dataclass
class _Tally:
    """Per-game results of every match of a batch, filled as games end (indexed by global game number)."""

    games: int
    winner_team: np.ndarray = field(init=False)  # int8: 0/1, -1 draw
    seconds: np.ndarray = field(init=False)
    stats: dict[str, np.ndarray] = field(init=False)  # name -> [games, 2] final figure by team
    teamplay: TeamPlayTracker | None = None

    def __post_init__(self) -> None:
        self.winner_team = np.full(self.games, -2, dtype=np.int8)
        self.seconds = np.zeros(self.games)
        self.stats = {name: np.zeros((self.games, 2)) for name in TEAM_STATS}


@dataclass
class _Roles:
    """Who plays what: each distinct agent (a *role*) and, per match, the role of its side A and of its side B.

    A spec that appears in several matches is one role (one agent instance, one action call per step for all of
    its games); a match of a spec against itself gets a second instance for side B.
    """

    agents: list[Agent]
    a_role: np.ndarray  # int [matches]
    b_role: np.ndarray  # int [matches]


def _assign_roles(pairings: list[Pairing], pool: AgentPool) -> _Roles:
    keys: dict[Any, int] = {}
    agents: list[Agent] = []

    def role(agent: Agent | str, copy: int) -> int:
        key = (agent.strip(), copy) if isinstance(agent, str) else (id(agent), copy)
        if key not in keys:
            keys[key] = len(agents)
            agents.append(pool.get(agent, copy) if isinstance(agent, str) else agent)
        return keys[key]

    a_role = [role(p.a, 0) for p in pairings]
    b_role = [role(p.b, int(_same_agent(p.a, p.b))) for p in pairings]
    return _Roles(agents, np.array(a_role, dtype=np.int64), np.array(b_role, dtype=np.int64))


def _same_agent(a: Agent | str, b: Agent | str) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.strip() == b.strip()
    return a is b


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
    pool: AgentPool | None = None,
    record: str | Path | None = None,
    lineups: np.ndarray | None = None,
) -> MatchResult:
    """Play ``games`` games of A against B with sides alternated; deterministic for (seed, batch).

    ``schema`` is the observation schema the game encodes (default: the one the agents read, else v1).
    ``progress(done, games)`` is called whenever games end. ``make_env(game_cfg, num_games, seed, schema)``
    builds the batched game (default: the embedded MOBA, ``fivectl.sim.MobaEnv``). ``pool`` keeps the agents
    that spec strings name across calls (default: built for this match). ``record``: a directory that gets one
    replay file per game (``fivectl replay``), with what the policies predicted. ``lineups``: the heroes of each
    game (see :class:`Pairing`; [2, k] plays every game with the same heroes per side).
    """
    if lineups is not None and np.ndim(lineups) == 2:
        lineups = np.broadcast_to(np.asarray(lineups), (games, *np.shape(lineups)))
    pairings = [Pairing(a, b, games, lineups)]
    return play_matches(pairings, game_cfg, seed, batch, schema, progress, make_env, pool, record)[0]


def play_matches(
    pairings: list[Pairing],
    game_cfg: GameConfig,
    seed: int = 0,
    batch: int = 32,
    schema: ObsSchema | None = None,
    progress: Callable[[int, int], None] | None = None,
    make_env: EnvFactory | None = None,
    pool: AgentPool | None = None,
    record: str | Path | None = None,
    scripted_schema: ObsSchema | None = None,
) -> list[MatchResult]:
    """Play several matches in one batch of ``batch`` game slots; one :class:`MatchResult` per pairing, in order.

    The games of all matches queue in order (match by match) and take slots as games end. Deterministic for
    (pairings, seed, batch); a match's games depend on the games it shares the batch with, as they share the
    game's random stream. Arguments as :func:`play_match`; ``progress(done, total)`` counts every match's games;
    ``scripted_schema``: the schema of a batch with no policy in it (bots and random play the actions it has).
    """
    if not pairings:
        return []
    for p in pairings:
        if p.games < 1:
            raise BadInput(f"games must be >= 1, got {p.games}")
    if batch < 1:
        raise BadInput(f"batch must be >= 1, got {batch}")
    roles = _assign_roles(list(pairings), pool or AgentPool())
    _check_team_sizes(roles.agents, game_cfg.team_size)
    schema = schema or _match_schema(roles.agents, scripted_schema)
    sizes = np.array([p.games for p in pairings], dtype=np.int64)
    slots = int(min(batch, sizes.sum()))
    env = (make_env or _moba_env)(game_cfg, slots, seed, schema)
    for i, agent in enumerate(roles.agents):
        agent.reset(slots, seed=seed * 2 + 1 + i)  # A, B of a single match: seed*2+1, seed*2+2

    started = time.perf_counter()
    queue = _GameQueue(sizes)
    lineups = _game_lineups(pairings, env)
    recording = _recording(env, record, roles, queue, seed)
    try:
        tally, invalid, hero_steps = _run_games(
            env, roles, queue, _step_limit(game_cfg, int(sizes.sum()), slots), progress, recording, lineups
        )
    finally:
        if recording is not None:
            recording.close()  # games cut short leave no partial file
    wall = time.perf_counter() - started
    results = []
    for m, p in enumerate(pairings):
        ids = slice(queue.offsets[m], queue.offsets[m] + p.games)
        a, b = roles.agents[roles.a_role[m]], roles.agents[roles.b_role[m]]
        results.append(_summarize(a.spec, b.spec, tally, ids, invalid[m], hero_steps[m], seed, wall))
    return results


class _GameQueue:
    """Games numbered globally, match by match: game ``offsets[m] + i`` is game ``i`` of match ``m``."""

    def __init__(self, sizes: np.ndarray):
        self.total = int(sizes.sum())
        self.offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.match_of = np.repeat(np.arange(len(sizes)), sizes)  # [total]
        self.index_in_match = np.arange(self.total) - self.offsets[self.match_of]


def _run_games(
    env,
    roles: _Roles,
    queue: _GameQueue,
    step_limit: int,
    progress: Callable[[int, int], None] | None,
    recording: MatchRecording | None = None,
    lineups: np.ndarray | None = None,
) -> tuple[_Tally, np.ndarray, np.ndarray]:
    slots, k = env.num_games, env.team_size
    matches = len(roles.a_role)
    tally = _Tally(queue.total)
    if tracks_team_play(env):
        tally.teamplay = TeamPlayTracker(env, queue.total)
    slot_game = np.arange(slots, dtype=np.int64)  # global game number playing in each slot; -1 idle
    invalid = np.zeros((matches, 2))  # invalid actions by A, by B, per match
    hero_steps = np.zeros(matches)
    next_game, finished = slots, 0
    first = np.ones(slots, dtype=bool)
    if lineups is not None:
        _choose_lineups(env, lineups, queue, slot_game, np.arange(slots))
    obs = env.reset()
    if recording is not None:
        recording.start(np.arange(slots), slot_game)
    rows_of_slots = np.arange(slots)
    missed_first = np.zeros((len(roles.agents), slots), dtype=bool)

    for _ in range(step_limit):
        active = slot_game >= 0
        match = np.where(active, queue.match_of[slot_game], -1)
        team_a = np.where(active, queue.index_in_match[slot_game] % 2, 0).astype(np.int64)
        if recording is not None:
            recording.begin_step()
        actions = _actions(env, obs, roles, match, team_a, first, missed_first, recording)
        if tally.teamplay is not None:
            tally.teamplay.before_step(slot_game)
        obs, _, done, info = env.step(actions)
        if tally.teamplay is not None:
            tally.teamplay.after_step(slot_game, done)
        if recording is not None:
            recording.step(actions, done, info)

        on = rows_of_slots[active]
        bad = np.asarray(info["invalid_actions"]).reshape(slots, 2, k).sum(axis=2)  # [slots, team]
        np.add.at(invalid, (match[on], 0), bad[on, team_a[on]])
        np.add.at(invalid, (match[on], 1), bad[on, 1 - team_a[on]])
        hero_steps += k * np.bincount(match[on], minlength=matches)

        ended = np.flatnonzero(done & active)
        if len(ended):
            _record(tally, slot_game[ended], ended, info)
            finished += len(ended)
            taken = ended[: max(0, queue.total - next_game)]
            slot_game[ended] = -1
            slot_game[taken] = np.arange(next_game, next_game + len(taken))
            next_game += len(taken)
            if lineups is not None and len(taken):  # the automatic reset drew the slot's old lineup: redo it
                obs = _choose_lineups(env, lineups, queue, slot_game, taken, restart=True)
            if recording is not None and len(taken):
                recording.start(taken, slot_game[taken])
            if progress is not None:
                progress(finished, queue.total)
            if finished == queue.total:
                return tally, invalid, hero_steps
        first = np.asarray(done, dtype=bool).copy()
    raise FivectlError(
        f"match did not finish: {finished}/{queue.total} games ended within {step_limit} steps"
    )


def _actions(
    env,
    obs: dict[str, np.ndarray],
    roles: _Roles,
    match: np.ndarray,
    team_a: np.ndarray,
    first: np.ndarray,
    missed_first: np.ndarray,
    recording: MatchRecording | None = None,
) -> np.ndarray:
    """Every slot's actions [slots, 2k, 4]: each agent is called once, for all the slots where it plays a side.

    ``match`` is each slot's match (-1 idle), ``team_a`` the team of that match's A. An agent with no game running
    is not called; the slots that started a new game meanwhile are kept in ``missed_first`` [roles, slots] and
    told at its next call, so ``first`` always means "a new game started here since your last call".
    """
    slots, k = env.num_games, env.team_size
    actions = np.zeros((slots, 2 * k, 4), dtype=np.int32)
    active = match >= 0
    match = np.maximum(match, 0)
    for r, agent in enumerate(roles.agents):
        as_a = active & (roles.a_role[match] == r)
        as_b = active & (roles.b_role[match] == r)
        rows = np.flatnonzero(as_a | as_b)
        if len(rows) == 0:
            missed_first[r] |= first
            continue
        team = np.where(as_b, 1 - team_a, team_a)  # 0 where it does not play
        told = first | missed_first[r]
        missed_first[r] = False
        heroes = team_agent_index(team[rows], k)
        actions[rows[:, None], heroes] = act_in(agent, env, obs, team, told, rows)
        if recording is not None:
            recording.add_predictions(agent, heroes)
    return actions


def _game_lineups(pairings: list[Pairing], env) -> np.ndarray | None:
    """int [total games, 2 sides, k] of every queued game (-1: drawn at random), or None if no match chose any."""
    if all(p.lineups is None for p in pairings):
        return None
    if not hasattr(env, "set_lineups"):
        raise BadInput("chosen lineups need a game that accepts them (the embedded MOBA's set_lineups)")
    k = env.team_size
    parts = []
    for p in pairings:
        if p.lineups is None:
            parts.append(np.full((p.games, 2, k), -1, dtype=np.int32))
            continue
        lineups = np.asarray(p.lineups, dtype=np.int32)
        if lineups.shape != (p.games, 2, k):
            raise BadInput(
                f"lineups: expected shape {(p.games, 2, k)} for {p.games} games, got {lineups.shape}"
            )
        parts.append(lineups)
    return np.concatenate(parts)


def _choose_lineups(env, lineups, queue: _GameQueue, slot_game, slots, restart: bool = False):
    """Give ``slots`` the lineups of the games they play next, side A's heroes on A's team; ``restart`` starts
    those games again with them (returns the new observation)."""
    games = slot_game[slots]
    by_side = lineups[games]  # [n, side, k]
    a_on_team1 = (queue.index_in_match[games] % 2 == 1)[:, None, None]
    by_team = np.where(a_on_team1, by_side[:, ::-1], by_side)
    env.set_lineups(by_team, slots)
    if restart:
        mask = np.zeros(env.num_games, dtype=bool)
        mask[slots] = True
        return env.restart(mask)
    return None


def _record(tally: _Tally, game_ids: np.ndarray, slots: np.ndarray, info: dict) -> None:
    """Store the final outcome of the games that ended in ``slots`` (the info of their last step)."""
    tally.winner_team[game_ids] = np.asarray(info["winner"])[slots]
    tally.seconds[game_ids] = np.asarray(info["game_time"])[slots]
    for name in TEAM_STATS:
        if name not in info and name in OPTIONAL_TEAM_STATS:
            continue
        tally.stats[name][game_ids] = np.asarray(info[name])[slots]


def _summarize(
    a: str, b: str, tally: _Tally, ids: slice, invalid: np.ndarray, hero_steps: float, seed: int, wall: float
) -> MatchResult:
    """The result of the match whose games are ``ids`` in the tally (``invalid``: by A, by B)."""
    winner_team = tally.winner_team[ids]
    games = len(winner_team)
    team_a = np.arange(games) % 2
    a_won = winner_team == team_a
    b_won = winner_team == 1 - team_a
    outcomes = np.where(a_won, 1, np.where(b_won, -1, 0))
    a_wins, b_wins = int(a_won.sum()), int(b_won.sum())
    draws = games - a_wins - b_wins
    score = a_wins + 0.5 * draws
    games_ix = np.arange(games)

    def side_means(name: str) -> tuple[float, float]:
        by_team = tally.stats[name][ids]
        return float(by_team[games_ix, team_a].mean()), float(by_team[games_ix, 1 - team_a].mean())

    kills, towers, last_hits, denies, building_hp = (side_means(name) for name in TEAM_STATS)
    teamplay = tally.teamplay.side_figures(ids, team_a) if tally.teamplay is not None else {}
    return MatchResult(
        a=a,
        b=b,
        games=games,
        a_wins=a_wins,
        b_wins=b_wins,
        draws=draws,
        a_win_rate=score / games,
        a_win_rate_ci95=wilson_interval(score, games),
        mean_game_seconds=float(tally.seconds[ids].mean()),
        a_kills_mean=kills[0],
        b_kills_mean=kills[1],
        a_towers_mean=towers[0],
        b_towers_mean=towers[1],
        a_last_hits_mean=last_hits[0],
        b_last_hits_mean=last_hits[1],
        a_denies_mean=denies[0],
        b_denies_mean=denies[1],
        team0_wins=int((winner_team == 0).sum()),
        team1_wins=int((winner_team == 1).sum()),
        a_invalid_action_rate=float(invalid[0] / max(hero_steps, 1)),
        b_invalid_action_rate=float(invalid[1] / max(hero_steps, 1)),
        seed=seed,
        wall_seconds=wall,
        outcomes=outcomes.tolist(),
        a_building_hp_mean=building_hp[0],
        b_building_hp_mean=building_hp[1],
        **teamplay,
    )


def _recording(env, record: str | Path | None, roles: _Roles, queue: _GameQueue, seed: int):
    if record is None:
        return None
    if not hasattr(env, "final"):
        raise BadInput("--record: only games of the embedded MOBA can be recorded")
    from fivectl.evaluate.recording import MatchRecording

    return MatchRecording(env, Path(record), roles, queue, seed)


def _moba_env(game_cfg: GameConfig, num_games: int, seed: int, schema: ObsSchema):
    from fivectl.sim import MobaEnv  # the compiled game is imported only when a match is played

    return MobaEnv(game_cfg, num_games=num_games, seed=seed, schema=schema)


def env_with_change(change: str | None) -> EnvFactory | None:
    """A factory of embedded games that all run ``change`` (``fivectl anneal``); None for the game as it is."""
    if change is None:
        return None

    def make(game_cfg: GameConfig, num_games: int, seed: int, schema: ObsSchema):
        env = _moba_env(game_cfg, num_games, seed, schema)
        env.set_change(change, 1.0)  # before the first reset: every game runs it
        return env

    return make


def _check_team_sizes(agents: list[Agent], team_size: int) -> None:
    """A checkpoint plays the team size it was trained for (its network pools across that many heroes)."""
    for a in agents:
        size = getattr(a, "team_size", None)
        if size is not None and size != team_size:
            raise BadInput(
                f"{a.spec} plays teams of {size}, this game has teams of {team_size}: give its game "
                f"(--recipe of its run, or --set game.team_size={size})"
            )


def _schema_version(agents: list[Agent]) -> int:
    wanted = {a.schema_version for a in agents if a.schema_version is not None}
    if len(wanted) > 1:
        reads = ", ".join(
            f"{a.spec} reads v{a.schema_version}" for a in agents if a.schema_version is not None
        )
        raise BadInput(f"the agents read different observation schemas: {reads}")
    return wanted.pop() if wanted else 1


def _match_schema(agents: list[Agent], fallback: ObsSchema | None = None) -> ObsSchema:
    """The schema the policies read: their checkpoint's own (a surgery may have grown or retired fields, or added
    an action, under the same version number), else ``schemas/obs/vN.toml`` of their version. A match of scripted
    agents only reads ``fallback`` when given (the run's schema: the actions its game has), else v1."""
    if fallback is not None and all(a.schema_version is None for a in agents):
        return fallback
    version = _schema_version(agents)
    own = {
        a.net.schema.to_json(): a.net.schema
        for a in agents
        if a.schema_version == version and hasattr(a, "net")
    }
    if len(own) > 1:
        specs = ", ".join(a.spec for a in agents if hasattr(a, "net"))
        raise BadInput(
            f"the agents read different observation schemas (v{version}, one changed by surgery): {specs}"
        )
    if own:
        return next(iter(own.values()))
    return load_schema(version)


def _step_limit(game_cfg: GameConfig, games: int, slots: int) -> int:
    """Enough env steps for every game to reach the time limit, twice over (list-scheduling bound + slack)."""
    per_game = math.ceil(game_cfg.time_limit_s * game_cfg.fps / game_cfg.frameskip) + 2
    return 2 * per_game * (math.ceil(games / slots) + 1)


__all__ = [
    "AgentPool",
    "MatchResult",
    "Pairing",
    "merge_results",
    "play_match",
    "play_matches",
    "wilson_interval",
]
