"""TrueSkill ratings on the paper's scale (OpenAI Five appendix J).

Settings: sigma0 = 25/3, beta = sigma0 / 2, tau = 0 (skills do not drift: a version's skill is fixed), draw
probability from the recipe (paper: 0.02).

The scale is shifted so that random play has mu = 0. The ``trueskill`` package's default prior mean of 25 is only a
convention: a 1-vs-1 update depends on the two means through their difference alone, so adding a constant to every
mean changes no result. We therefore use a prior mean ``MU0 = 0`` (internally mu = 25 on the package's usual scale
maps to 0 here, and no offset has to be added or removed anywhere) and anchor the reference agent ``random`` at
mu = 0 with a near-zero sigma; every displayed, stored and plotted rating is on this shifted scale. A new agent with
no history starts at random's level, which is where an untrained policy is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import trueskill as _ts

from fivectl.errors import BadInput

MU0 = 0.0
"""Prior mean: random play (the scale is shifted so random is 0)."""
SIGMA0 = 25.0 / 3.0
BETA = SIGMA0 / 2.0
TAU = 0.0
ANCHOR_SIGMA = 1e-3
"""Sigma of the anchor ``random``: its rating defines the scale, so it is known exactly (the package needs > 0)."""
MIN_DRAW_PROBABILITY = 1e-3
"""Draws are rated with at least this draw probability: with a draw margin near 0 the package's truncated
Gaussian becomes numerically unstable and a draw would *increase* sigma."""

A_WON = 1
B_WON = -1
DRAW = 0
OUTCOMES = (A_WON, B_WON, DRAW)
"""A game outcome from agent A's side, as ``play_fn`` returns it: 1 A won, -1 B won, 0 draw (the convention of
``fivectl.evaluate.match.MatchResult.outcomes``)."""


def _make_env(draw_probability: float) -> _ts.TrueSkill:
    return _ts.TrueSkill(mu=MU0, sigma=SIGMA0, beta=BETA, tau=TAU, draw_probability=draw_probability)


@dataclass(frozen=True)
class Rating:
    """A skill belief N(mu, sigma^2) on the shifted scale (random = 0)."""

    mu: float
    sigma: float

    @property
    def conservative(self) -> float:
        """mu - 3 sigma: the skill the agent has with ~99.9% confidence."""
        return self.mu - 3.0 * self.sigma


class TrueSkillModel:
    """1-vs-1 TrueSkill updates with the paper's settings."""

    def __init__(self, draw_probability: float = 0.02):
        if not 0.0 <= draw_probability < 1.0:
            raise BadInput(f"TrueSkill draw probability must be in [0, 1), got {draw_probability}")
        self.draw_probability = draw_probability
        self._env = _make_env(draw_probability)
        self._draw_env = _make_env(max(draw_probability, MIN_DRAW_PROBABILITY))

    @staticmethod
    def initial(mu: float = MU0) -> Rating:
        """A fresh belief at ``mu`` with the prior sigma."""
        return Rating(float(mu), SIGMA0)

    @staticmethod
    def anchor() -> Rating:
        """The fixed rating of ``random``."""
        return Rating(MU0, ANCHOR_SIGMA)

    def update(self, a: Rating, b: Rating, outcome: int) -> tuple[Rating, Rating]:
        """Posterior ratings of a and b after one game with ``outcome`` (``A_WON``, ``B_WON`` or ``DRAW``)."""
        if outcome not in OUTCOMES:
            raise BadInput(f"game outcome must be one of {OUTCOMES}, got {outcome!r}")
        ra, rb = _ts.Rating(a.mu, a.sigma), _ts.Rating(b.mu, b.sigma)
        if outcome == DRAW:
            na, nb = _ts.rate_1vs1(ra, rb, drawn=True, env=self._draw_env)
        elif outcome == A_WON:
            na, nb = _ts.rate_1vs1(ra, rb, env=self._env)
        else:
            nb, na = _ts.rate_1vs1(rb, ra, env=self._env)
        return Rating(float(na.mu), float(na.sigma)), Rating(float(nb.mu), float(nb.sigma))

    @staticmethod
    def win_probability(a: Rating, b: Rating) -> float:
        """P(a beats b) = Phi((mu_a - mu_b) / sqrt(2 beta^2 + sigma_a^2 + sigma_b^2)), draws ignored."""
        denom = math.sqrt(2.0 * BETA**2 + a.sigma**2 + b.sigma**2)
        return 0.5 * (1.0 + math.erf((a.mu - b.mu) / (denom * math.sqrt(2.0))))


def draw_margin(draw_probability: float) -> float:
    """epsilon with P(|perf_a - perf_b| <= epsilon) = draw probability for equal agents (TrueSkill's draw margin)."""
    # The package's own function (its inverse normal CDF differs from the exact one in the 6th digit), so the
    # joint fit and the game-by-game updates use the same margin.
    return _ts.calc_draw_margin(draw_probability, 2, env=_make_env(draw_probability))


def fit_ratings(
    games: Sequence[tuple[str, str, int]],
    fixed: Mapping[str, Rating],
    free: Sequence[str],
    draw_probability: float = 0.02,
    start: Mapping[str, float] | None = None,
    max_iterations: int = 100,
) -> dict[str, Rating]:
    """Ratings of the ``free`` agents from all ``games`` at once: the MAP of the TrueSkill model, sigma by Laplace.

    Used to calibrate reference agents, whose ratings are then frozen and become the scale. Game-by-game TrueSkill
    updates with tau = 0 (assumed-density filtering) depend on the game order and become confident before they are
    accurate when several unknown agents are rated against each other; fitting every game jointly (the idea of
    TrueSkill Through Time) removes both. Model, as TrueSkill: perf ~ N(mu, beta^2) per game, a draw when
    |perf_a - perf_b| <= epsilon (:func:`draw_margin`), prior N(MU0, SIGMA0^2) for each free agent; a fixed agent's
    sigma widens its games' noise. ``games`` are ``(a, b, outcome)`` with outcome from A's side (1, -1, 0); games
    without a free agent, or with an agent that is neither free nor fixed, are ignored.
    """
    import torch  # only calibration needs it

    free = list(free)
    if not free:
        return {}
    index = {name: i for i, name in enumerate(free)}
    known = [g for g in games if _fittable(g, index, fixed)]
    eps = draw_margin(max(draw_probability, MIN_DRAW_PROBABILITY))
    t = _game_tensors(known, index, fixed)

    def neg_log_posterior(theta: torch.Tensor) -> torch.Tensor:
        skill_a = torch.where(t["a_free"], theta[t["a_idx"]], t["a_mu"])
        skill_b = torch.where(t["b_free"], theta[t["b_idx"]], t["b_mu"])
        d = skill_a - skill_b
        log_lik = torch.where(
            t["outcome"] == A_WON,
            torch.special.log_ndtr((d - eps) / t["scale"]),
            torch.where(
                t["outcome"] == B_WON,
                torch.special.log_ndtr((-d - eps) / t["scale"]),
                # not d.abs(): torch gives |d| slope 0 at d = 0, which would drop a draw's curvature there
                _log_draw_probability(torch.where(d >= 0, d, -d), eps, t["scale"]),
            ),
        )
        log_prior = -0.5 * (((theta - MU0) / SIGMA0) ** 2).sum()
        return -(log_lik.sum() + log_prior)

    theta = torch.tensor([float((start or {}).get(n, MU0)) for n in free], dtype=torch.float64)
    theta = _newton_minimize(neg_log_posterior, theta, max_iterations)
    hessian = torch.autograd.functional.hessian(neg_log_posterior, theta)
    sigma = torch.linalg.inv(hessian).diagonal().clamp_min(0.0).sqrt()
    return {n: Rating(float(theta[i]), float(sigma[i])) for n, i in index.items()}


def _fittable(game: tuple[str, str, int], index: Mapping[str, int], fixed: Mapping[str, Rating]) -> bool:
    a, b, _ = game
    return (a in index or b in index) and all(x in index or x in fixed for x in (a, b))


def _game_tensors(games: list, index: Mapping[str, int], fixed: Mapping[str, Rating]) -> dict:
    import torch

    def side(names: list[str]) -> tuple:
        is_free = torch.tensor([n in index for n in names], dtype=torch.bool)
        idx = torch.tensor([index.get(n, 0) for n in names], dtype=torch.long)
        mu = torch.tensor([fixed[n].mu if n not in index else 0.0 for n in names], dtype=torch.float64)
        var = torch.tensor(
            [fixed[n].sigma ** 2 if n not in index else 0.0 for n in names], dtype=torch.float64
        )
        return is_free, idx, mu, var

    a_free, a_idx, a_mu, a_var = side([g[0] for g in games])
    b_free, b_idx, b_mu, b_var = side([g[1] for g in games])
    return {
        "a_free": a_free,
        "a_idx": a_idx,
        "a_mu": a_mu,
        "b_free": b_free,
        "b_idx": b_idx,
        "b_mu": b_mu,
        "scale": torch.sqrt(2.0 * BETA**2 + a_var + b_var),
        "outcome": torch.tensor([int(g[2]) for g in games], dtype=torch.long),
    }


def _log_draw_probability(abs_d, eps: float, scale):  # torch tensors
    """log P(|perf diff| <= eps) = log(Phi((eps - |d|)/c) - Phi((-eps - |d|)/c)), on the accurate lower tail."""
    import torch

    upper = torch.special.log_ndtr((eps - abs_d) / scale)
    lower = torch.special.log_ndtr((-eps - abs_d) / scale)
    return upper + torch.log1p(-torch.exp(lower - upper))


def _newton_minimize(f, theta, max_iterations: int):  # f: tensor -> scalar tensor, theta: float64 tensor
    """Damped Newton on a convex function (the negative log posterior is convex: every term is log-concave)."""
    import torch

    for _ in range(max_iterations):
        value = f(theta)
        grad = torch.autograd.functional.jacobian(f, theta)
        hessian = torch.autograd.functional.hessian(f, theta)
        step = torch.linalg.solve(hessian, grad)
        size = 1.0
        while size > 1e-8 and f(theta - size * step) > value:
            size *= 0.5
        theta = theta - size * step
        if float((size * step).abs().max()) < 1e-10:
            break
    return theta
