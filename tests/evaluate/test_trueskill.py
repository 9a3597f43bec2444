import math

import numpy as np
import pytest
import trueskill as ts

from fivectl.errors import BadInput
from fivectl.evaluate.trueskill import (
    A_WON,
    ANCHOR_SIGMA,
    B_WON,
    BETA,
    DRAW,
    MU0,
    SIGMA0,
    TAU,
    Rating,
    TrueSkillModel,
    draw_margin,
    fit_ratings,
)


def test_paper_settings():
    assert SIGMA0 == pytest.approx(25 / 3)
    assert BETA == pytest.approx(SIGMA0 / 2)
    assert TAU == 0.0
    assert MU0 == 0.0
    model = TrueSkillModel()
    assert model.draw_probability == 0.02
    assert model.initial() == Rating(0.0, SIGMA0)
    assert model.anchor() == Rating(0.0, ANCHOR_SIGMA)


def test_shifted_scale_gives_the_same_updates_as_the_package_default_scale():
    # The package's usual prior mean is 25; our scale puts random at 0. Only mean differences matter.
    model = TrueSkillModel(0.02)
    usual = ts.TrueSkill(mu=25.0, sigma=SIGMA0, beta=BETA, tau=0.0, draw_probability=0.02)
    a, b = Rating(3.0, 6.0), Rating(0.0, 2.0)
    for outcome, (ra, rb), drawn in (
        (A_WON, (a, b), False),
        (B_WON, (b, a), False),
        (DRAW, (a, b), True),
    ):
        ours = model.update(a, b, outcome)
        first, second = ts.rate_1vs1(
            ts.Rating(ra.mu + 25, ra.sigma), ts.Rating(rb.mu + 25, rb.sigma), drawn=drawn, env=usual
        )
        theirs_a, theirs_b = (first, second) if ra is a else (second, first)
        assert ours[0].mu == pytest.approx(theirs_a.mu - 25, abs=1e-9)
        assert ours[1].mu == pytest.approx(theirs_b.mu - 25, abs=1e-9)
        assert ours[0].sigma == pytest.approx(theirs_a.sigma, abs=1e-9)


def test_win_moves_ratings_apart_and_shrinks_sigma():
    model = TrueSkillModel()
    a, b = model.initial(), model.initial()
    na, nb = model.update(a, b, A_WON)
    assert na.mu > 0 > nb.mu and na.sigma < SIGMA0
    nb2, na2 = model.update(b, a, B_WON)
    assert na2 == na and nb2 == nb


def test_draw_with_zero_draw_probability_does_not_widen_sigma():
    model = TrueSkillModel(0.0)
    a, anchor = model.initial(), model.anchor()
    na, _ = model.update(a, anchor, DRAW)
    assert na.sigma < SIGMA0 and na.mu == pytest.approx(0.0, abs=1e-9)


def test_win_probability_and_conservative():
    equal = Rating(5.0, 1.0)
    assert TrueSkillModel.win_probability(equal, equal) == pytest.approx(0.5)
    strong, weak = Rating(10.0, 1e-9), Rating(0.0, 1e-9)
    expected = 0.5 * (1 + math.erf(10.0 / (math.sqrt(2) * BETA * math.sqrt(2))))
    assert TrueSkillModel.win_probability(strong, weak) == pytest.approx(expected)
    assert Rating(10.0, 2.0).conservative == 4.0


def test_bad_outcome_and_draw_probability():
    with pytest.raises(BadInput):
        TrueSkillModel().update(Rating(0, 1), Rating(0, 1), 2)
    with pytest.raises(BadInput):
        TrueSkillModel(1.0)


def sample_games(skills: dict[str, float], pairs, games: int, seed: int) -> list[tuple[str, str, int]]:
    """Outcomes from TrueSkill's generative model: perf ~ N(skill, beta^2), a draw within the draw margin."""
    rng = np.random.default_rng(seed)
    out = []
    for a, b in pairs:
        diff = skills[a] - skills[b] + rng.normal(0.0, math.sqrt(2) * BETA, games)
        out += [(a, b, int(o)) for o in np.where(np.abs(diff) <= draw_margin(0.02), 0, np.sign(diff))]
    return out


def test_draw_margin_matches_the_package():
    env = ts.TrueSkill(mu=0.0, sigma=SIGMA0, beta=BETA, tau=0.0, draw_probability=0.02)
    assert draw_margin(0.02) == pytest.approx(ts.calc_draw_margin(0.02, 2, env=env))


def test_fit_recovers_hidden_skills_jointly():
    skills = {"random": 0.0, "p": 4.0, "e": 12.0, "m": 24.0}
    pairs = [("p", "random"), ("e", "random"), ("e", "p"), ("m", "e"), ("m", "p")]
    anchor = {"random": TrueSkillModel.anchor()}
    few = fit_ratings(sample_games(skills, pairs, 30, 0), anchor, ["p", "e", "m"])
    many = fit_ratings(sample_games(skills, pairs, 300, 0), anchor, ["p", "e", "m"])
    for name in ("p", "e", "m"):
        assert abs(many[name].mu - skills[name]) <= 3 * many[name].sigma, (name, many[name])
        assert many[name].sigma < few[name].sigma
    assert many["p"].mu < many["e"].mu < many["m"].mu


def test_fit_agrees_with_trueskill_where_the_update_is_exact():
    # Draws against an exactly known opponent: both give sigma^-2 = sigma0^-2 + n * (draw precision), mu = 0.
    anchor = TrueSkillModel.anchor()
    fitted = fit_ratings([("x", "random", DRAW)] * 40, {"random": anchor}, ["x"])["x"]
    model, sequential = TrueSkillModel(), TrueSkillModel.initial()
    for _ in range(40):
        sequential, _ = model.update(sequential, anchor, DRAW)
    assert fitted.mu == pytest.approx(0.0, abs=1e-6)
    assert fitted.sigma == pytest.approx(sequential.sigma, rel=1e-3)


def test_fit_without_games_is_the_prior_and_ignores_unrelated_games():
    games = [
        ("a", "b", A_WON),
        ("random", "c", B_WON),
    ]  # "a", "b" neither free nor fixed; no free agent in #2
    fitted = fit_ratings(games, {"random": TrueSkillModel.anchor(), "c": Rating(5.0, 1.0)}, ["z"])
    assert fitted == {"z": Rating(MU0, SIGMA0)}
    assert fit_ratings(games, {}, []) == {}
