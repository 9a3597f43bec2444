"""Drafting measured in games: ``draft simulate`` (does the table's drafting win?) and ``draft calibrate`` (is the
first-frame win probability a probability?).

Both play the same checkpoint on both sides (so only the heroes differ) through ``evaluate``'s match runner with
chosen lineups. Game ``i`` puts side A on team ``i % 2``; in ``simulate`` side A is the drafting side.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from fivectl.draft.model import DraftModel, FirstFrame
from fivectl.draft.search import Drafter, DraftState
from fivectl.draft.table import DraftTable, lineup_values
from fivectl.errors import BadInput
from fivectl.evaluate.match import play_match, wilson_interval
from fivectl.sim import hero_id

OPPONENTS = ("random", "greedy")


class CompletionMeans:
    """Greedy drafting's one-step value: the mean table value over every lineup that contains the picks."""

    def __init__(self, table: DraftTable):
        space = table.space
        pos = space.positions(0, space.size)
        self.bits = (np.int64(1) << pos).sum(axis=2)  # [lineups, 2] pool-position masks of both teams
        self.values = table.values.astype(np.float64)

    def mean(self, m0: int, m1: int) -> float:
        match = ((self.bits[:, 0] & m0) == m0) & ((self.bits[:, 1] & m1) == m1)
        return float(self.values[match].mean())


def draft_lineup(
    drafter: Drafter,
    drafting_team: int,
    against: str,
    rng: np.random.Generator,
    means: CompletionMeans | None,
    cache: dict,
) -> np.ndarray:
    """One full draft: ``drafting_team`` follows the search, the other team drafts randomly or greedily.
    Returns hero ids [2, k] (team 0, team 1)."""
    teams: tuple[list[int], list[int]] = ([], [])
    pool = [int(h) for h in drafter.space.pool]
    for team in drafter.turns:
        free = [h for h in pool if h not in teams[0] and h not in teams[1]]
        if team == drafting_team:
            key = (tuple(sorted(teams[0])), tuple(sorted(teams[1])))
            if key not in cache:
                cache[key] = drafter.advise(DraftState((list(teams[0]), list(teams[1])), []))
            pick = hero_id(cache[key].pick)
        elif against == "random":
            pick = int(rng.choice(free))
        else:
            pick = greedy_pick(drafter, means, teams, team, free)
        teams[team].append(pick)
    return np.array([sorted(teams[0]), sorted(teams[1])], dtype=np.int32)


def greedy_pick(drafter: Drafter, means: CompletionMeans, teams, team: int, free: list[int]) -> int:
    m = [sum(1 << drafter.pos[h] for h in t) for t in teams]
    scores = []
    for h in free:
        c = list(m)
        c[team] |= 1 << drafter.pos[h]
        v = means.mean(c[0], c[1])
        scores.append(v if team == 0 else 1.0 - v)
    return free[int(np.argmax(scores))]


@dataclass
class SimulateResult:
    games: int
    against: str
    mode: str
    drafting_win_rate: float
    drafting_win_rate_ci95: tuple[float, float]
    predicted_win_rate: float
    wins: int
    losses: int
    draws: int
    seed: int

    def to_dict(self) -> dict:
        d = asdict(self)
        d["drafting_win_rate_ci95"] = list(self.drafting_win_rate_ci95)
        return d


def simulate(
    model: DraftModel,
    table: DraftTable,
    drafter: Drafter,
    games: int,
    against: str = "random",
    mode: str = "minimax",
    seed: int = 0,
    batch: int = 32,
    progress: Callable[[int, int], None] | None = None,
) -> SimulateResult:
    """Draft ``games`` lineups (the drafting side on team ``i % 2`` in game i) and play them, same agent both
    sides; the drafting side's win rate (a draw counts half) against the table's prediction for those lineups."""
    if games < 1:
        raise BadInput(f"--games: must be >= 1, got {games}")
    if against not in OPPONENTS:
        raise BadInput(f"--against: random or greedy, got {against!r}")
    rng = np.random.default_rng(seed)
    means = CompletionMeans(table) if against == "greedy" else None
    cache: dict = {}
    by_team = np.stack([draft_lineup(drafter, i % 2, against, rng, means, cache) for i in range(games)])
    drafting_team = np.arange(games) % 2
    by_side = np.where(drafting_team[:, None, None] == 1, by_team[:, ::-1], by_team)  # [drafting, other]
    predicted = lineup_values(table, by_team)
    predicted = np.where(drafting_team == 0, predicted, 1.0 - predicted)
    result = play_match(
        model.spec, model.spec, model.game, games, seed=seed, batch=batch, schema=model.schema,
        progress=progress, lineups=by_side,
    )  # fmt: skip
    score = result.a_wins + 0.5 * result.draws
    return SimulateResult(
        games=games,
        against=against,
        mode=mode,
        drafting_win_rate=score / games,
        drafting_win_rate_ci95=wilson_interval(score, games),
        predicted_win_rate=float(predicted.mean()),
        wins=result.a_wins,
        losses=result.b_wins,
        draws=result.draws,
        seed=seed,
    )


def random_lineups(pool: np.ndarray, team_size: int, games: int, rng: np.random.Generator) -> np.ndarray:
    """int32 [games, 2, k]: uniformly random disjoint teams from ``pool``."""
    keys = rng.random((games, len(pool)))
    picks = np.asarray(pool)[np.argsort(keys, axis=1)[:, : 2 * team_size]]
    return np.sort(picks.reshape(games, 2, team_size), axis=2).astype(np.int32)


@dataclass
class CalibrateResult:
    games: int
    brier: float
    base_rate_brier: float
    team0_win_rate: float
    mean_predicted: float
    bins: list[dict]
    plot: str | None
    seed: int
    heroes: list[dict]  # per hero: games, observed and predicted win rate of the side holding it
    hero_rank_correlation: float | None  # Spearman, observed vs predicted per-hero win rates
    hero_spread: float  # std of the observed per-hero win rates
    hero_spread_chance: float  # the std expected from the games' coin flips alone, if heroes did not matter

    def to_dict(self) -> dict:
        return asdict(self)


def reliability_bins(p: np.ndarray, y: np.ndarray, n_bins: int = 10) -> list[dict]:
    """Per probability bin: games, mean predicted probability, observed frequency (empty bins left out)."""
    which = np.minimum((p * n_bins).astype(int), n_bins - 1)
    out = []
    for b in range(n_bins):
        inside = which == b
        if inside.any():
            out.append(
                {"lo": b / n_bins, "hi": (b + 1) / n_bins, "games": int(inside.sum()),
                 "predicted": float(p[inside].mean()), "observed": float(y[inside].mean())}
            )  # fmt: skip
    return out


def hero_win_rates(lineups: np.ndarray, p: np.ndarray, y: np.ndarray) -> list[dict]:
    """Per hero that played: the games it played and the observed and predicted win rate of its side, from
    lineups [games, 2, k] (hero ids), team 0's predicted win probability ``p`` and outcome ``y`` [games]."""
    from fivectl.sim import hero_names

    side_p = np.stack([p, 1.0 - p], axis=1)[:, :, None]  # [games, 2, 1]
    side_y = np.stack([y, 1.0 - y], axis=1)[:, :, None]
    ids = lineups.reshape(-1)
    predicted = np.broadcast_to(side_p, lineups.shape).reshape(-1)
    observed = np.broadcast_to(side_y, lineups.shape).reshape(-1)
    out = []
    for hero in np.unique(ids):
        mine = ids == hero
        out.append(
            {"hero": hero_names([hero])[0], "games": int(mine.sum()),
             "observed": float(observed[mine].mean()), "predicted": float(predicted[mine].mean())}
        )  # fmt: skip
    return out


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float | None:
    """Spearman's rank correlation (average ranks for ties); None with fewer than 3 values or a constant one."""
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return float(np.corrcoef(average_ranks(a), average_ranks(b))[0, 1])


def average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 0..n-1 of ``x``, tied values sharing their mean rank."""
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return (first + (counts - 1) / 2.0)[inverse]


def brier_scores(p: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(Brier score of the predictions, Brier score of always predicting the observed base rate)."""
    return float(np.mean((p - y) ** 2)), float(np.mean((y.mean() - y) ** 2))


def calibrate(
    model: DraftModel,
    games: int,
    plot: str | Path | None = None,
    seed: int = 0,
    batch: int = 32,
    lane_samples: int = 3,
    progress: Callable[[int, int], None] | None = None,
) -> CalibrateResult:
    """Play ``games`` games with random lineups (same agent both sides); compare each lineup's first-frame
    P(team 0 wins) with the outcome (a draw counts 0.5)."""
    from fivectl.sim import resolve_pool

    if games < 1:
        raise BadInput(f"--games: must be >= 1, got {games}")
    rng = np.random.default_rng(seed)
    by_team = random_lineups(resolve_pool(model.game), model.team_size, games, rng)
    rater = FirstFrame(model, min(games, 4096), seed, lane_samples)
    p = np.concatenate([rater.win_probs(by_team[s : s + rater.batch]) for s in range(0, games, rater.batch)])
    a_team = np.arange(games) % 2
    by_side = np.where(a_team[:, None, None] == 1, by_team[:, ::-1], by_team)
    result = play_match(
        model.spec, model.spec, model.game, games, seed=seed, batch=batch, schema=model.schema,
        progress=progress, lineups=by_side,
    )  # fmt: skip
    outcome_a = (np.asarray(result.outcomes) + 1) / 2.0  # 1 A won, 0.5 draw, 0 B won
    y = np.where(a_team == 0, outcome_a, 1.0 - outcome_a)  # team 0's outcome
    brier, base = brier_scores(p, y)
    bins = reliability_bins(p, y)
    if plot is not None:
        plot_reliability(bins, brier, base, games, plot)
    heroes = hero_win_rates(by_team, p, y)
    observed = np.array([h["observed"] for h in heroes])
    chance = np.array([np.sqrt(0.25 / h["games"]) for h in heroes])
    return CalibrateResult(games, brier, base, float(y.mean()), float(p.mean()), bins,
                           str(plot) if plot else None, seed, heroes,
                           rank_correlation(observed, np.array([h["predicted"] for h in heroes])),
                           float(observed.std()), float(np.sqrt(np.mean(chance**2))))  # fmt: skip


def plot_reliability(bins: list[dict], brier: float, base: float, games: int, path: str | Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fivectl.store.atomic import write_bytes_atomic

    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], "--", color="grey", label="perfect calibration")
    ax.plot([b["predicted"] for b in bins], [b["observed"] for b in bins], "o-", label="first-frame win head")
    for b in bins:
        ax.annotate(str(b["games"]), (b["predicted"], b["observed"]), fontsize=7, xytext=(3, 3),
                    textcoords="offset points")  # fmt: skip
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("predicted P(team 0 wins)")
    ax.set_ylabel("observed team 0 win rate")
    ax.set_title(f"{games} games: Brier {brier:.3f} (base rate {base:.3f})")
    ax.legend(loc="upper left")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    write_bytes_atomic(path, buf.getvalue())
