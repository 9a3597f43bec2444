"""The league: TrueSkill ratings of a run's versions against reference agents (OpenAI Five appendix J).

- Reference agents keep fixed ratings. ``random`` is the anchor: fixed at mu = 0 from the start (see
  :mod:`fivectl.evaluate.trueskill` for the shifted scale). The other references (scripted bots ``bot:NAME``,
  checkpoints of other runs) are first calibrated by games against the anchor and each other (a joint fit of all
  their games), then frozen. A version of this run that is pinned becomes a reference too: its current rating is
  frozen.
- A test agent (a version of this run) plays only references within ``eval.match_window`` TrueSkill of its
  current mu (the paper: 10, about a 15%..85% win rate); when none is that close, the nearest one. The window is
  re-checked before every match, as the rating moves.
- A new version starts at the previous version's mu (the paper) with sigma reset to sigma0: its parameters are
  new, so the certainty earned by the previous parameters does not carry over, and a wide belief lets the rating
  move quickly to where the new version actually is.
- Every game is stored (agents, winner, seed, time) with the ratings in ``league/league.json``, written atomically
  (at the end of each evaluation, when it fails, and every ``SAVE_INTERVAL_S`` during it), so evaluation resumes
  and accumulates. Seeds come from (league seed, match number), so a league that is stopped and resumed gives the
  same results as one that ran straight through.

Games are played by a callback, so the league can be tested without the game::

    play_fn(agent_a_spec: str, agent_b_spec: str, games: int, seed: int) -> Sequence[int]

returning one outcome per game from A's side: 1 A won, -1 B won, 0 draw (``MatchResult.outcomes``). A
``play_fn`` may also have a ``play_many(matches)`` method taking a list of ``(a, b, games, seed)`` and returning
one outcome list per match: the league then hands it the matches that do not depend on each other (all the
matches of a calibration round) at once, so they can share one batch of games.
"""

from __future__ import annotations

import fcntl
import io
import json
import math
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fivectl.config.eval import EvalConfig
from fivectl.errors import BadInput, FivectlError
from fivectl.evaluate.trueskill import A_WON, B_WON, DRAW, OUTCOMES, Rating, TrueSkillModel, fit_ratings
from fivectl.store.atomic import write_bytes_atomic, write_json_atomic
from fivectl.store.rundir import now_iso

LEAGUE_FILE = "league.json"
LOCK_FILE = ".lock"
SAVE_INTERVAL_S = 10.0
"""During a long evaluation the league is saved at most this often (and always when the evaluation ends or fails).
Any save is a state between two matches, and seeds depend only on the match number, so resuming from whichever
save happened last continues exactly as an uninterrupted evaluation would."""
LEAGUE_FORMAT = 1
ANCHOR = "random"

ROLE_ANCHOR = "anchor"
ROLE_REFERENCE = "reference"
ROLE_VERSION = "version"
ROLES = (ROLE_ANCHOR, ROLE_REFERENCE, ROLE_VERSION)

PlayFn = Callable[[str, str, int, int], Sequence[int]]
GameProgress = Callable[[int, int], None]
"""``on_game(done, total)``: games played so far and games planned so far (calibration rounds add theirs as they
are drawn up, so ``total`` can grow); called whenever a match's games are recorded."""


def version_name(version: int) -> str:
    """How a version of this run is named in the league."""
    return f"v{int(version)}"


@dataclass
class LeagueAgent:
    name: str
    role: str
    mu: float
    sigma: float
    fixed: bool
    """True for the anchor, calibrated references and pinned versions: their rating never changes."""
    version: int | None = None

    @property
    def rating(self) -> Rating:
        return Rating(self.mu, self.sigma)


@dataclass(frozen=True)
class GameRecord:
    a: str
    b: str
    winner: str | None
    """Name of the winner, None for a draw."""
    seed: int
    """Seed of the match the game belongs to (passed to ``play_fn``)."""
    game: int
    """Index of the game within its match."""
    time: str


@dataclass(frozen=True)
class LeaderboardRow:
    name: str
    role: str
    mu: float
    sigma: float
    conservative: float
    """mu - 3 sigma."""
    games: int
    fixed: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class WinRateMatrix:
    """``score[i, j]``: wins of agent i against agent j, a draw counting half; ``games[i, j]`` games they played."""

    names: list[str]
    score: np.ndarray
    games: np.ndarray

    @property
    def rates(self) -> np.ndarray:
        """Win rate of row against column; NaN where they never played."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.games > 0, self.score / np.maximum(self.games, 1), np.nan)

    def to_dict(self) -> dict[str, Any]:
        rates = self.rates
        return {
            "names": list(self.names),
            "rates": [[None if math.isnan(x) else float(x) for x in row] for row in rates],
            "games": self.games.astype(int).tolist(),
        }


class League:
    """Ratings and game results of one run's league folder. Open with :meth:`open` or :meth:`for_run`."""

    def __init__(self, path: str | Path, cfg: EvalConfig, run_spec: str = "", seed: int = 0):
        self.path = Path(path)
        self.cfg = cfg
        self.run_spec = run_spec
        self.model = TrueSkillModel(cfg.draw_probability)
        self.seed = int(seed)
        self.matches = 0
        self.agents: dict[str, LeagueAgent] = {}
        self.games: list[GameRecord] = []
        self.seconds = {"calibration": 0.0, "versions": 0.0}
        """Wall seconds this object spent calibrating references and rating versions (games included)."""
        self.cpu_seconds = {"calibration": 0.0, "versions": 0.0}
        """The same in CPU seconds of this process (games played elsewhere are not counted)."""
        self._last_save = time.monotonic()
        self.on_game: GameProgress | None = None
        """Told of the games played by this object's evaluations (``GameProgress``); None: nobody listens."""
        self._games_planned = 0
        self._games_done = 0
        self._ensure_references(cfg.references)

    # -- opening and saving -------------------------------------------------------------------------
    @property
    def file(self) -> Path:
        return self.path / LEAGUE_FILE

    @classmethod
    def open(cls, path: str | Path, cfg: EvalConfig, run_spec: str = "", seed: int = 0) -> League:
        """The league in folder ``path`` (a new, empty one if it has no league file yet).

        ``run_spec`` is the run directory as agent specs name it: version v is played as ``f"{run_spec}@{v}"``.
        ``seed`` is used only when the league is created; an existing league keeps its own. References listed in
        ``cfg.references`` that the league does not have yet are added, to be calibrated. A corrupt league file
        raises BadInput naming the file, and nothing is overwritten.
        """
        league = cls(path, cfg, run_spec=run_spec, seed=seed)
        if league.file.exists():
            league._load()
            league._ensure_references(cfg.references)
        return league

    @classmethod
    @contextmanager
    def session(
        cls, path: str | Path, cfg: EvalConfig, run_spec: str = "", seed: int = 0
    ) -> Iterator[League]:
        """:meth:`open` while holding the league's lock, so two evaluations (say, the trainer's periodic one and
        ``fivectl evaluate trueskill``) cannot overwrite each other's games. A league in use raises BadInput."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        fd = os.open(path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise BadInput(
                    f"{path}: the league is in use by another evaluation; try again when it ends"
                ) from None
            yield cls.open(path, cfg, run_spec=run_spec, seed=seed)
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    @classmethod
    def for_run(cls, run: Any, cfg: EvalConfig | None = None, seed: int = 0) -> League:
        """The league of a :class:`fivectl.store.rundir.RunDir` (``cfg`` defaults to the run recipe's ``[eval]``)."""
        cfg = cfg if cfg is not None else run.load_recipe().eval
        return cls.open(run.league_path, cfg, run_spec=str(run.path), seed=seed)

    def save(self) -> None:
        write_json_atomic(self.file, self._state())
        self._last_save = time.monotonic()

    def _save_if_due(self) -> None:
        if time.monotonic() - self._last_save >= SAVE_INTERVAL_S:
            self.save()

    @contextmanager
    def _timed(self, stage: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.seconds[stage] += time.perf_counter() - wall
            self.cpu_seconds[stage] += time.process_time() - cpu

    @contextmanager
    def _saved_at_exit(self) -> Iterator[None]:
        try:
            yield
        finally:
            self.save()

    def _state(self) -> dict[str, Any]:
        return {
            "format": LEAGUE_FORMAT,
            "seed": self.seed,
            "matches": self.matches,
            "agents": [asdict(agent) for agent in self.agents.values()],
            "games": [asdict(game) for game in self.games],
        }

    def _load(self) -> None:
        try:
            state = json.loads(self.file.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise self._corrupt(str(e)) from None
        try:
            self._restore(state)
        except (KeyError, TypeError, ValueError) as e:
            raise self._corrupt(f"{type(e).__name__}: {e}") from None

    def _corrupt(self, why: str) -> BadInput:
        return BadInput(f"{self.file}: corrupt league file ({why}); fix or move it away")

    def _restore(self, state: Any) -> None:
        if not isinstance(state, dict):
            raise ValueError("not a JSON object")
        if state.get("format") != LEAGUE_FORMAT:
            raise ValueError(f"unknown format {state.get('format')!r}")
        seed, matches = state["seed"], state["matches"]
        if not isinstance(seed, int) or not isinstance(matches, int) or matches < 0:
            raise ValueError("seed and matches must be integers")
        agents = {}
        for raw in state["agents"]:
            agent = _parse_agent(raw)
            if agent.name in agents:
                raise ValueError(f"agent {agent.name!r} listed twice")
            agents[agent.name] = agent
        if ANCHOR not in agents or agents[ANCHOR].role != ROLE_ANCHOR:
            raise ValueError(f"no anchor agent {ANCHOR!r}")
        games = [_parse_game(raw, agents) for raw in state["games"]]
        self.seed, self.matches, self.agents, self.games = seed, matches, agents, games

    def _ensure_references(self, specs: Iterable[str]) -> None:
        if ANCHOR not in self.agents:
            anchor = self.model.anchor()
            self.agents[ANCHOR] = LeagueAgent(ANCHOR, ROLE_ANCHOR, anchor.mu, anchor.sigma, fixed=True)
        for spec in specs:
            if spec not in self.agents:
                self.add_reference(spec)

    # -- agents -------------------------------------------------------------------------------------
    def spec(self, name: str) -> str:
        """The agent spec ``play_fn`` receives for a league agent."""
        agent = self._agent(name)
        if agent.role == ROLE_VERSION:
            return f"{self.run_spec}@{agent.version}"
        return agent.name

    def rating(self, name: str) -> Rating:
        return self._agent(name).rating

    def games_played(self, name: str) -> int:
        return sum(1 for g in self.games if name in (g.a, g.b))

    def version_rating(self, version: int) -> Rating | None:
        """The rating of a version of this run once it has played games; None before."""
        agent = self.agents.get(version_name(version))
        if agent is None or self.games_played(agent.name) == 0:
            return None
        return agent.rating

    def newest_version(self) -> LeagueAgent | None:
        """The version of this run with the highest number in the league (None before the first)."""
        versions = [a for a in self.agents.values() if a.role == ROLE_VERSION and a.version is not None]
        return max(versions, key=lambda a: a.version) if versions else None

    def _agent(self, name: str) -> LeagueAgent:
        try:
            return self.agents[name]
        except KeyError:
            raise BadInput(f"league: no agent {name!r} (known: {', '.join(self.agents)})") from None

    def add_reference(self, spec: str) -> None:
        """A reference agent (a bot or another run's checkpoint) to calibrate before it gets a fixed rating."""
        spec = spec.strip()
        if not spec:
            raise BadInput("league: empty reference spec")
        if spec in self.agents:
            return
        start = self.model.initial()
        self.agents[spec] = LeagueAgent(spec, ROLE_REFERENCE, start.mu, start.sigma, fixed=False)

    def uncalibrated(self) -> list[str]:
        return [a.name for a in self.agents.values() if a.role == ROLE_REFERENCE and not a.fixed]

    def references(self) -> list[str]:
        """Agents with fixed ratings that test agents play: the anchor, calibrated references, pinned versions."""
        return [a.name for a in self.agents.values() if a.fixed]

    def pin(self, name: str) -> Rating:
        """Freeze a rated agent (usually a version of this run) so that it becomes a reference."""
        agent = self._agent(name)
        if not agent.fixed and self.games_played(name) == 0:
            raise BadInput(f"league: {name} has no games yet; evaluate it before pinning it")
        agent.fixed = True
        self.save()
        return agent.rating

    # -- playing ------------------------------------------------------------------------------------
    def calibrate_references(self, play_fn: PlayFn, games_per_pair: int = 10, rounds: int = 3) -> list[str]:
        """Rate the uncalibrated references from games against the fixed ones and each other, then freeze them.

        In each of ``rounds`` rounds every uncalibrated reference plays ``games_per_pair`` games against each
        other reference within the match window of its current mu (else the nearest); then all their ratings are
        re-estimated jointly from every game they have played (:func:`fivectl.evaluate.trueskill.fit_ratings`:
        frozen ratings define the scale, so they get the order-free joint fit rather than game-by-game updates).
        Returns the names calibrated. An interrupted calibration is simply run again: its games are kept and used.
        """
        pending = self.uncalibrated()
        if games_per_pair < 1 or rounds < 1:
            raise BadInput("league: calibration needs games_per_pair >= 1 and rounds >= 1")
        with self._timed("calibration"), self._saved_at_exit():
            for _ in range(rounds if pending else 0):
                # Ratings move only at the end of a round, so the round's matches are independent: one batch.
                round_matches = []
                for name in pending:
                    others = [a for a in self.agents.values() if a.role != ROLE_VERSION and a.name != name]
                    round_matches += [
                        (name, o.name) for o in self._within_window(self.agents[name].mu, others)
                    ]
                self._plan_games(len(round_matches) * games_per_pair)
                self._play_matches(round_matches, games_per_pair, play_fn, rate=False)
                self._fit_references(pending)
            for name in pending:
                self.agents[name].fixed = True
        return pending

    def _fit_references(self, names: list[str]) -> None:
        fixed = {a.name: a.rating for a in self.agents.values() if a.fixed}
        outcomes = [
            (g.a, g.b, A_WON if g.winner == g.a else B_WON if g.winner == g.b else DRAW) for g in self.games
        ]
        start = {n: self.agents[n].mu for n in names}
        fitted = fit_ratings(outcomes, fixed, names, self.cfg.draw_probability, start=start)
        for name, rating in fitted.items():
            self.agents[name].mu, self.agents[name].sigma = rating.mu, rating.sigma

    def evaluate_version(
        self, version: int, play_fn: PlayFn, games: int | None = None, games_per_match: int | None = None
    ) -> Rating:
        """Play ``games`` (default ``eval.games``) more games of a version against references; its new rating.

        Uncalibrated references are calibrated first. Before each match of ``games_per_match`` games, the opponent
        is drawn uniformly from the references within the match window of the version's current mu (default
        ``eval.games_per_match``; the match runner alternates sides by game index, so an even number is fair).
        """
        games = self.cfg.games if games is None else int(games)
        self._plan_games(games)
        return self._evaluate_version(version, play_fn, games, games_per_match)

    def _evaluate_version(
        self, version: int, play_fn: PlayFn, games: int, games_per_match: int | None
    ) -> Rating:
        games_per_match = self.cfg.games_per_match if games_per_match is None else int(games_per_match)
        if games < 1 or games_per_match < 1:
            raise BadInput("league: games and games_per_match must be >= 1")
        agent = self._version_agent(version)
        if agent.fixed:
            raise BadInput(f"league: {agent.name} is pinned, its rating is fixed")
        if self.uncalibrated():
            self.calibrate_references(play_fn)
        with self._timed("versions"), self._saved_at_exit():
            remaining = games
            while remaining > 0:
                n = min(games_per_match, remaining)
                rng, _ = self._match_seeds()
                candidates = self._within_window(agent.mu, [a for a in self.agents.values() if a.fixed])
                opponent = candidates[int(rng.integers(len(candidates)))]
                self._play_match(agent.name, opponent.name, n, play_fn)
                remaining -= n
        return agent.rating

    def evaluate_versions(
        self,
        versions: Iterable[int],
        play_fn: PlayFn,
        games: int | None = None,
        games_per_match: int | None = None,
    ) -> dict[int, Rating]:
        """:meth:`evaluate_version` for each version, oldest first (so each starts from its predecessor's mu)."""
        chosen = sorted(set(versions))
        games = self.cfg.games if games is None else int(games)
        self._plan_games(games * len(chosen))  # every version's games up front: the total is known
        return {v: self._evaluate_version(v, play_fn, games, games_per_match) for v in chosen}

    def _plan_games(self, games: int) -> None:
        self._games_planned += max(0, int(games))
        self._tell_progress()

    def _tell_progress(self) -> None:
        if self.on_game is not None:
            self.on_game(self._games_done, self._games_planned)

    def _version_agent(self, version: int) -> LeagueAgent:
        version = int(version)
        if version < 0:
            raise BadInput(f"league: versions are >= 0, got {version}")
        name = version_name(version)
        if name not in self.agents:
            start = self.model.initial(self._previous_mu(version))
            self.agents[name] = LeagueAgent(
                name, ROLE_VERSION, start.mu, start.sigma, fixed=False, version=version
            )
        return self.agents[name]

    def _previous_mu(self, version: int) -> float:
        earlier = [a for a in self.agents.values() if a.role == ROLE_VERSION and a.version < version]
        if not earlier:
            return self.model.initial().mu
        return max(earlier, key=lambda a: a.version).mu

    def _within_window(self, mu: float, candidates: list[LeagueAgent]) -> list[LeagueAgent]:
        """Candidates within the match window of ``mu``, else the nearest one (paper J: at most 10 TrueSkill)."""
        if not candidates:
            raise FivectlError("league: no reference agents to play against")
        close = [c for c in candidates if abs(c.mu - mu) <= self.cfg.match_window]
        return close or [min(candidates, key=lambda c: abs(c.mu - mu))]

    def _match_seeds(self, number: int | None = None) -> tuple[np.random.Generator, int]:
        """Matchmaking RNG and play seed of match ``number`` (default: the next one), from (league seed, match
        number) only."""
        number = self.matches if number is None else number
        words = np.random.SeedSequence([self.seed, number]).generate_state(2)
        return np.random.default_rng(int(words[0])), int(words[1])

    def _play_match(self, a_name: str, b_name: str, games: int, play_fn: PlayFn, rate: bool = True) -> None:
        """Play one match and record its games; with ``rate``, update the ratings that are not fixed game by
        game (TrueSkill's own updates, as for every test agent)."""
        self._play_matches([(a_name, b_name)], games, play_fn, rate)

    def _play_matches(
        self, pairs: list[tuple[str, str]], games: int, play_fn: PlayFn, rate: bool = True
    ) -> None:
        """Play independent matches of ``games`` games each (numbered in order, so seeded as if one by one) and
        record them in that order. Through ``play_fn.play_many`` they share one batch; otherwise each match is
        recorded as soon as it is played, so an interruption keeps the finished ones."""
        seeds = [self._match_seeds(self.matches + i)[1] for i in range(len(pairs))]
        requests = [
            (self.spec(a), self.spec(b), games, seed) for (a, b), seed in zip(pairs, seeds, strict=True)
        ]
        many = getattr(play_fn, "play_many", None)
        results = list(many(requests)) if many is not None else (play_fn(*r) for r in requests)
        if many is not None and len(results) != len(requests):
            raise FivectlError(
                f"league: play_many returned {len(results)} results for {len(requests)} matches"
            )
        for (a_name, b_name), seed, outcomes in zip(pairs, seeds, results, strict=True):
            self._record(a_name, b_name, _check_outcomes(outcomes, games, a_name, b_name), seed, rate)

    def _record(self, a_name: str, b_name: str, outcomes: list[int], seed: int, rate: bool) -> None:
        a, b = self.agents[a_name], self.agents[b_name]
        stamp = now_iso()
        for i, outcome in enumerate(outcomes):
            if rate:
                self._rate_game(a, b, outcome)
            winner = {A_WON: a_name, B_WON: b_name, DRAW: None}[outcome]
            self.games.append(GameRecord(a_name, b_name, winner, seed, i, stamp))
        self.matches += 1
        self._save_if_due()
        self._games_done += len(outcomes)
        self._tell_progress()

    def _rate_game(self, a: LeagueAgent, b: LeagueAgent, outcome: int) -> None:
        new_a, new_b = self.model.update(a.rating, b.rating, outcome)
        if not a.fixed:
            a.mu, a.sigma = new_a.mu, new_a.sigma
        if not b.fixed:
            b.mu, b.sigma = new_b.mu, new_b.sigma

    # -- reports ------------------------------------------------------------------------------------
    def leaderboard(self) -> list[LeaderboardRow]:
        """Every agent, highest mu first."""
        counts = self._game_counts()
        rows = [
            LeaderboardRow(
                a.name, a.role, a.mu, a.sigma, a.rating.conservative, counts.get(a.name, 0), a.fixed
            )
            for a in self.agents.values()
        ]
        return sorted(rows, key=lambda r: (-r.mu, r.name))

    def winrate_matrix(self) -> WinRateMatrix:
        """Pairwise results over every stored game, agents in leaderboard order."""
        names = [row.name for row in self.leaderboard()]
        index = {name: i for i, name in enumerate(names)}
        n = len(names)
        score = np.zeros((n, n))
        played = np.zeros((n, n))
        if self.games:
            ia = np.array([index[g.a] for g in self.games])
            ib = np.array([index[g.b] for g in self.games])
            a_points = np.array(
                [1.0 if g.winner == g.a else 0.5 if g.winner is None else 0.0 for g in self.games]
            )
            np.add.at(score, (ia, ib), a_points)
            np.add.at(score, (ib, ia), 1.0 - a_points)
            np.add.at(played, (ia, ib), 1.0)
            np.add.at(played, (ib, ia), 1.0)
        return WinRateMatrix(names, score, played)

    def summary(self) -> dict[str, Any]:
        """Leaderboard and win-rate matrix as JSON-ready data (for ``--json``)."""
        return {
            "leaderboard": [row.to_dict() for row in self.leaderboard()],
            "winrate": self.winrate_matrix().to_dict(),
            "games": len(self.games),
        }

    def plot_ratings(self, path: str | Path) -> Path:
        """PNG of mu +- sigma against version, with the references as horizontal lines."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        versions = sorted(
            (a for a in self.agents.values() if a.role == ROLE_VERSION), key=lambda a: a.version
        )
        if not versions:
            raise BadInput("league: no rated versions to plot")
        x = np.array([a.version for a in versions])
        mu = np.array([a.mu for a in versions])
        sigma = np.array([a.sigma for a in versions])
        fig = Figure(figsize=(8, 4.5), dpi=100)
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        ax.fill_between(x, mu - sigma, mu + sigma, alpha=0.25, label="μ ± σ")
        ax.plot(x, mu, marker="o", label="μ")
        for ref in (a for a in self.agents.values() if a.fixed and a.role != ROLE_VERSION):
            ax.axhline(ref.mu, linestyle="--", linewidth=0.8, color="grey")
            ax.annotate(ref.name, (x[0], ref.mu), textcoords="offset points", xytext=(2, 2), fontsize=8)
        ax.set_xlabel("version")
        ax.set_ylabel("TrueSkill (random = 0)")
        ax.legend(loc="best")
        ax.grid(alpha=0.3)
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        path = Path(path)
        write_bytes_atomic(path, buf.getvalue())
        return path

    def _game_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for g in self.games:
            counts[g.a] = counts.get(g.a, 0) + 1
            counts[g.b] = counts.get(g.b, 0) + 1
        return counts


def read_league(path: str | Path) -> League | None:
    """The league saved in folder ``path`` as it stands, for reading only: no lock is taken (every save is
    atomic, so a reader sees the last one whole) and nothing is added or written. None when the folder has no
    league file yet; a corrupt one raises BadInput naming the file."""
    league = League(path, EvalConfig(references=[]))
    if not league.file.exists():
        return None
    league._load()
    return league


def _check_outcomes(outcomes: Sequence[int], games: int, a: str, b: str) -> list[int]:
    result = [int(o) for o in outcomes]
    if len(result) != games or any(o not in OUTCOMES for o in result):
        raise FivectlError(f"league: play_fn returned {result!r} for {games} games of {a} vs {b}")
    return result


def _parse_agent(raw: Any) -> LeagueAgent:
    if not isinstance(raw, dict):
        raise ValueError("agent entry is not an object")
    agent = LeagueAgent(
        name=str(raw["name"]),
        role=str(raw["role"]),
        mu=float(raw["mu"]),
        sigma=float(raw["sigma"]),
        fixed=bool(raw["fixed"]),
        version=None if raw.get("version") is None else int(raw["version"]),
    )
    if agent.role not in ROLES:
        raise ValueError(f"agent {agent.name!r}: unknown role {agent.role!r}")
    if not (math.isfinite(agent.mu) and math.isfinite(agent.sigma) and agent.sigma > 0):
        raise ValueError(f"agent {agent.name!r}: bad rating")
    if (agent.role == ROLE_VERSION) != (agent.version is not None):
        raise ValueError(f"agent {agent.name!r}: only versions have a version number")
    return agent


def _parse_game(raw: Any, agents: dict[str, LeagueAgent]) -> GameRecord:
    if not isinstance(raw, dict):
        raise ValueError("game entry is not an object")
    game = GameRecord(
        a=str(raw["a"]),
        b=str(raw["b"]),
        winner=None if raw["winner"] is None else str(raw["winner"]),
        seed=int(raw["seed"]),
        game=int(raw["game"]),
        time=str(raw["time"]),
    )
    if game.a not in agents or game.b not in agents:
        raise ValueError(f"game of unknown agents {game.a!r} vs {game.b!r}")
    if game.winner not in (game.a, game.b, None):
        raise ValueError(f"game winner {game.winner!r} is neither {game.a!r} nor {game.b!r}")
    return game
