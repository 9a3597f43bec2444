"""The opponent pool of paper appendix N; opponents are drawn as training draws them, by a worker's OpponentSet
from the versions and probabilities the learner publishes."""

import json
import math

import numpy as np
import pytest

from fivectl.config import SelfPlayConfig, recipe_from_dict
from fivectl.errors import BadInput
from fivectl.runtime.opponents import LATEST, OpponentSet
from fivectl.schema import load_schema
from fivectl.selfplay import OpponentPool


def make_pool(**kw) -> OpponentPool:
    return OpponentPool(SelfPlayConfig(**kw))


def filled_pool(n: int, **kw) -> OpponentPool:
    pool = make_pool(**kw)
    for v in range(n):
        pool.add(v)
    return pool


def worker_draws(pool: OpponentPool, games: int, seed: int = 0) -> OpponentSet:
    """The opponents of a worker's games, for drawing as the training run draws them: bots off, every game
    drawn independently, the pool's own ``latest_fraction``."""
    recipe = recipe_from_dict(
        {
            "game": {"team_size": 1},
            "selfplay": {
                "latest_fraction": pool.cfg.latest_fraction,
                "past_versions_per_batch": 0,
                "bots": [],
            },
            "model": {"lstm_size": 4},
        }
    )
    return OpponentSet(recipe, load_schema(1), None, games, np.random.default_rng(seed))


def draw(pool: OpponentPool, opponents: OpponentSet) -> np.ndarray:
    """New opponents for every game of ``opponents``, from what the learner publishes: (versions, p)."""
    published = (np.array(pool.versions, dtype=np.int64), pool.probabilities())
    opponents.assign(np.ones(opponents.games, dtype=bool), published)
    return opponents.opponent.astype(np.int64)


def test_empty_pool_plays_only_latest():
    assert (draw(make_pool(), worker_draws(make_pool(), 50)) == LATEST).all()


def test_latest_fraction_and_softmax_sampling():
    pool = filled_pool(3)
    pool._q = [0.0, math.log(2.0), math.log(5.0)]  # p = [1, 2, 5] / 8
    games = worker_draws(pool, 50_000, seed=1)
    opponents = np.concatenate([draw(pool, games) for _ in range(4)])
    latest = opponents == LATEST
    assert abs(latest.mean() - 0.8) < 0.005
    past = opponents[~latest]
    freq = np.bincount(past, minlength=3) / past.size
    np.testing.assert_allclose(freq, [1 / 8, 2 / 8, 5 / 8], atol=0.01)


def test_latest_fraction_is_a_recipe_setting():
    pool = filled_pool(2, latest_fraction=0.0)
    assert (draw(pool, worker_draws(pool, 100, seed=2)) != LATEST).all()
    pool = filled_pool(2, latest_fraction=1.0)
    assert (draw(pool, worker_draws(pool, 100, seed=2)) == LATEST).all()


def test_versions_join_every_add_every_iterations_with_max_q():
    pool = make_pool(add_every=10)
    added = [it for it in range(0, 35) if pool.maybe_add(version=100 + it, iteration=it)]
    assert added == [0, 10, 20, 30]
    assert pool.versions == (100, 110, 120, 130)
    assert pool.q.tolist() == [0.0, 0.0, 0.0, 0.0]
    pool._q = [-1.0, 0.5, -3.0, 0.2]
    assert pool.maybe_add(version=140, iteration=40)
    assert pool.q[-1] == 0.5


def test_same_version_is_not_added_twice():
    pool = make_pool(add_every=1)
    assert pool.maybe_add(7, 0)
    assert not pool.maybe_add(7, 1)
    assert pool.versions == (7,)


def test_win_lowers_quality_by_eta_over_n_p():
    pool = filled_pool(4, eta=0.01)
    pool._q = [0.0, 1.0, 0.0, -1.0]
    p = pool.probabilities()
    pool.record_result(1, agent_won=True)
    expected = [0.0, 1.0 - 0.01 / (4 * p[1]), 0.0, -1.0]
    np.testing.assert_allclose(pool.q, expected, rtol=0, atol=1e-15)


def test_loss_draw_and_latest_games_leave_q_unchanged():
    pool = filled_pool(3)
    before = pool.q.copy()
    pool.record_result(2, agent_won=False)
    pool.record_result(LATEST, agent_won=True)
    np.testing.assert_array_equal(pool.q, before)
    m = pool.metrics()
    assert m["pool_past_games"] == 1 and m["pool_past_win_rate"] == 0.0


def test_expected_update_is_uniform_across_opponents():
    # Sampling i with p_i and applying eta/(N p_i) on every win moves each q by eta/N in expectation:
    # an opponent that is always beaten loses quality at the same rate however rarely it is drawn.
    pool = filled_pool(3, latest_fraction=0.0, eta=0.01)
    pool._q = [0.0, 2.0, -2.0]
    game = worker_draws(pool, 1, seed=3)
    start = pool.q.copy()
    n_games = 3000
    for _ in range(n_games):
        pool.record_results(draw(pool, game), [True])
    drops = start - pool.q
    np.testing.assert_allclose(drops, n_games * 0.01 / 3, rtol=0.15)


def test_beaten_opponents_lose_probability_to_unbeaten_ones():
    pool = filled_pool(5, latest_fraction=0.0)
    game = worker_draws(pool, 1, seed=4)
    strong = 4  # the newest version: the agent never beats it
    for _ in range(3000):
        opponent = draw(pool, game)
        pool.record_results(opponent, opponent != strong)
    p = pool.probabilities()
    assert p.argmax() == strong and p[strong] > 0.5


def test_record_results_weights_every_win_by_the_p_the_batch_arrived_with():
    pool = filled_pool(4, eta=0.01)
    pool._q = [0.0, 0.5, -0.5, 0.0]
    p, q = pool.probabilities(), pool.q
    opponents = np.array([0, 1, LATEST, 1, 3, 2, 1])
    won = np.array([True, True, True, False, True, True, True])
    pool.record_results(opponents, won)
    step = 0.01 / (4 * p)
    np.testing.assert_allclose(pool.q, q - step * [1, 2, 1, 1], rtol=0, atol=1e-15)
    assert pool.metrics()["pool_past_games"] == 6
    with pytest.raises(BadInput):
        pool.record_results([0, 1], [True])


def test_a_run_of_wins_against_a_rarely_drawn_version_stays_finite():
    # A round's games share a few past versions: a batch can hold dozens of wins against one version whose p is
    # small. Recomputing p after each win lowered q by ever larger steps until p underflowed to 0 and the next
    # update divided by zero (a quickstart run with 459 versions in its pool failed so).
    pool = filled_pool(459, eta=0.01)
    pool._q[7] = -8.0
    pool.record_results([7] * 64, [True] * 64)
    p = pool.probabilities()
    assert np.isfinite(pool.q).all() and np.isfinite(p).all()
    assert math.isclose(p.sum(), 1.0)
    assert pool.q[7] < -8.0


def test_a_win_against_a_version_whose_p_underflowed_leaves_its_q():
    pool = filled_pool(3, eta=0.01)
    pool._q = [0.0, -1e4, 0.0]  # exp(-1e4) is 0: drawn only from a worker's older copy of p
    pool.record_results([1, 1], [True, True])
    assert pool.q[1] == -1e4
    assert pool.metrics()["pool_past_win_rate"] == 1.0


def test_max_pool_drops_oldest():
    pool = make_pool(add_every=1, max_pool=3)
    for it in range(6):
        pool.maybe_add(it, it)
    assert pool.versions == (3, 4, 5)
    assert len(pool.q) == 3


def test_result_for_dropped_opponent_counts_but_changes_no_q():
    pool = make_pool(add_every=1, max_pool=2)
    for v in range(3):
        pool.add(v)
    before = pool.q.copy()
    pool.record_result(0, agent_won=True)
    np.testing.assert_array_equal(pool.q, before)
    assert pool.metrics()["pool_past_win_rate"] == 1.0


def test_metrics():
    pool = make_pool()
    m = pool.metrics()
    assert m["pool_size"] == 0 and math.isnan(m["pool_q_max"]) and math.isnan(m["pool_past_win_rate"])
    pool = filled_pool(4)
    m = pool.metrics()
    assert m["pool_size"] == 4
    assert m["pool_p_entropy"] == pytest.approx(math.log(4))
    pool._q = [-2.0, 0.0, 1.0, 1.0]
    for won in (True, False, True, True):
        pool.record_result(0, won)
    m = pool.metrics()
    assert (m["pool_q_max"], m["pool_q_mean"]) == (1.0, pytest.approx(pool.q.mean()))
    assert m["pool_q_min"] < -2.0  # three wins against version 0
    assert m["pool_past_win_rate"] == 0.75 and m["pool_past_win_rate_recent"] == 0.75
    assert m["pool_p_entropy"] < math.log(4)


def test_state_round_trips_through_json_and_resume_is_exact():
    cfg = dict(add_every=2, max_pool=5)
    pool = make_pool(**cfg)
    games = worker_draws(pool, 8, seed=5)
    rng = games.rng
    for it in range(12):
        pool.maybe_add(it, it)
        pool.record_results(draw(pool, games), rng.random(8) < 0.7)
    saved = json.loads(json.dumps(pool.state_dict()))
    rng_state = rng.bit_generator.state

    resumed = make_pool(**cfg)
    resumed.load_state_dict(saved)
    assert resumed.state_dict() == pool.state_dict()
    assert resumed.metrics() == pytest.approx(pool.metrics(), nan_ok=True)

    resumed_games = worker_draws(resumed, 8)
    resumed_games.rng.bit_generator.state = rng_state
    for it in range(12, 20):
        for p, g in ((pool, games), (resumed, resumed_games)):
            p.maybe_add(it, it)
            p.record_results(draw(p, g), g.rng.random(8) < 0.7)
    assert resumed.state_dict() == pool.state_dict()


@pytest.mark.parametrize(
    "bad",
    [
        None,
        {"format": 99},
        {"format": 1, "versions": [1, 2], "q": [0.0], "past_games": 0, "past_wins": 0, "recent": []},
        {"format": 1, "versions": [1, 1], "q": [0.0, 0.0], "past_games": 0, "past_wins": 0, "recent": []},
        {"format": 1, "versions": [1], "q": ["x"], "past_games": 0, "past_wins": 0, "recent": []},
        {"format": 1, "versions": [1], "q": [float("nan")], "past_games": 0, "past_wins": 0, "recent": []},
        {"format": 1, "versions": [1], "q": [0.0], "past_games": 1, "past_wins": 2, "recent": []},
        {"format": 1, "versions": [1], "q": [0.0]},
    ],
)
def test_malformed_state_is_bad_input_and_changes_nothing(bad):
    pool = filled_pool(2)
    before = pool.state_dict()
    with pytest.raises(BadInput, match="opponent pool state"):
        pool.load_state_dict(bad)
    assert pool.state_dict() == before
