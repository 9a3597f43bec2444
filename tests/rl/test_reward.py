"""Reward shaping against hand-computed cases (paper appendix G)."""

from __future__ import annotations

import numpy as np
import pytest

from fivectl.config import RewardConfig
from fivectl.errors import BadInput
from fivectl.rl.reward import (
    component_means,
    component_weights,
    shape_rewards,
    shaped_components,
    time_weight,
    weighted_components,
)
from fivectl.sim import COMPONENT_INDEX, REWARD_COMPONENTS

C = len(REWARD_COMPONENTS)


def components(games: int, agents: int, **per_component: list) -> np.ndarray:
    """A [G, A, C] array with the given components set; values are per game, per agent lists."""
    out = np.zeros((games, agents, C), dtype=np.float32)
    for name, values in per_component.items():
        out[:, :, COMPONENT_INDEX[name]] = np.asarray(values, dtype=np.float32).reshape(games, agents)
    return out


def test_weights_follow_component_order_and_paper_defaults():
    w = component_weights(RewardConfig())
    assert w.shape == (C,)
    assert w[COMPONENT_INDEX["win"]] == 5.0
    assert w[COMPONENT_INDEX["gold"]] == pytest.approx(0.006)
    assert w[COMPONENT_INDEX["tower_t3"]] == 4.5
    assert w[COMPONENT_INDEX["last_hit"]] == pytest.approx(-0.16)


def test_the_lane_penalty_weighs_at_the_value_the_caller_gives_or_at_its_schedules_start():
    from fivectl.config.fields import Schedule

    lifted = RewardConfig(off_lane=Schedule(points=[[0, -0.1], [1000, 0.0]]))
    lane = COMPONENT_INDEX["off_lane"]
    assert component_weights(lifted)[lane] == pytest.approx(-0.1)
    assert component_weights(lifted, off_lane=-0.04)[lane] == pytest.approx(-0.04)
    assert component_weights(RewardConfig())[lane] == 0.0
    x = components(1, 2, off_lane=[[2.0, 0.0]])  # hero 0 spent 2 s off its lane
    now = shape_rewards(x, lifted, np.array([0.0]), team_size=1, team_spirit=0.0, off_lane=-0.04)
    np.testing.assert_allclose(now, [[-0.08, 0.08]], rtol=1e-6)  # zero sum: the other hero gains it
    lifted_off = shape_rewards(x, lifted, np.array([0.0]), team_size=1, team_spirit=0.0, off_lane=0.0)
    assert np.all(lifted_off == 0)


def test_time_weight_is_0_6_per_ten_minutes():
    t = np.array([0.0, 300.0, 600.0, 1200.0])
    np.testing.assert_allclose(time_weight(t, RewardConfig()), [1.0, 0.6**0.5, 0.6, 0.36], rtol=1e-6)
    faster = RewardConfig(time_decay=0.5, decay_minutes=5.0)
    np.testing.assert_allclose(time_weight(np.array([300.0]), faster), [0.5], rtol=1e-6)


def test_1v1_zero_sum_at_game_start():
    # hero 0: 100 gold -> 0.6; hero 1: 50 xp -> 0.1. Zero sum: 0.6 - 0.1 and 0.1 - 0.6.
    x = components(1, 2, gold=[100, 0], xp=[0, 50])
    r = shape_rewards(x, RewardConfig(), np.array([0.0]), team_size=1, team_spirit=0.3)
    assert r.dtype == np.float32 and r.shape == (1, 2)
    np.testing.assert_allclose(r, [[0.5, -0.5]], rtol=1e-6)


def test_1v1_time_decay_spares_the_win_reward():
    # At T = 10 min: hero 0 wins (+5, not decayed) with 100 gold (0.6 x 0.6 = 0.36); hero 1 loses (-5).
    # rho = [5.36, -5]; zero sum -> [10.36, -10.36].
    x = components(1, 2, win=[1, -1], gold=[100, 0])
    r = shape_rewards(x, RewardConfig(), np.array([600.0]), team_size=1, team_spirit=0.0)
    np.testing.assert_allclose(r, [[10.36, -10.36]], rtol=1e-5)


def test_time_decay_is_per_game():
    # Two games, same events (hero 0 dies once, weight -1) at T = 0 and T = 20 min (factor 0.36).
    x = components(2, 2, death=[[1, 0], [1, 0]])
    r = shape_rewards(x, RewardConfig(zero_sum=False), np.array([0.0, 1200.0]), team_size=1, team_spirit=0.0)
    np.testing.assert_allclose(r, [[-1.0, 0.0], [-0.36, 0.0]], rtol=1e-5)


def five_v_five() -> np.ndarray:
    # Weight gold = 1 so gold is rho: team 0 earns [1, 2, 3, 4, 5] (mean 3), team 1 [0, 0, 0, 0, 10] (mean 2).
    return components(1, 10, gold=[1, 2, 3, 4, 5, 0, 0, 0, 0, 10])


UNIT_GOLD = RewardConfig(gold=1.0)


@pytest.mark.parametrize(
    ("tau", "expected"),
    [
        # zero sum: team 0 minus 2 -> [-1, 0, 1, 2, 3]; team 1 minus 3 -> [-3, -3, -3, -3, 7]
        (0.0, [-1, 0, 1, 2, 3, -3, -3, -3, -3, 7]),
        # half team spirit: 0.5 r_i + 0.5 team mean (team 0: 1, team 1: -1)
        (0.5, [0, 0.5, 1, 1.5, 2, -2, -2, -2, -2, 3]),
        # full team spirit: everyone gets the team mean
        (1.0, [1, 1, 1, 1, 1, -1, -1, -1, -1, -1]),
    ],
)
def test_5v5_zero_sum_and_team_spirit(tau, expected):
    r = shape_rewards(five_v_five(), UNIT_GOLD, np.array([0.0]), team_size=5, team_spirit=tau)
    np.testing.assert_allclose(r, [expected], atol=1e-6)


def test_5v5_without_zero_sum():
    cfg = RewardConfig(gold=1.0, zero_sum=False)
    r = shape_rewards(five_v_five(), cfg, np.array([0.0]), team_size=5, team_spirit=1.0)
    np.testing.assert_allclose(r, [[3, 3, 3, 3, 3, 2, 2, 2, 2, 2]], atol=1e-6)


def test_zero_sum_rewards_sum_to_zero_over_the_game():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 10, C)).astype(np.float32)
    r = shape_rewards(x, RewardConfig(), rng.uniform(0, 900, size=4), team_size=5, team_spirit=0.3)
    np.testing.assert_allclose(r.sum(axis=1), 0.0, atol=1e-4)


def test_team_rewards_are_shared_by_team_spirit_one():
    # A tower is given to every hero of team 0 (team component): with tau = 1 and zero sum all of team 0 get
    # 2.25 x 1 and all of team 1 get -2.25.
    x = components(1, 10, tower_t1=[1] * 5 + [0] * 5)
    r = shape_rewards(x, RewardConfig(), np.array([0.0]), team_size=5, team_spirit=1.0)
    np.testing.assert_allclose(r, [[2.25] * 5 + [-2.25] * 5], rtol=1e-6)


def test_components_breakdown_sums_to_reward_with_time_dims():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 4, 2, C)).astype(np.float32)  # [T, G, A, C]
    t = rng.uniform(0, 1200, size=(3, 4))
    parts = shaped_components(x, RewardConfig(), t, team_size=1, team_spirit=0.5)
    r = shape_rewards(x, RewardConfig(), t, team_size=1, team_spirit=0.5)
    assert parts.shape == x.shape and r.shape == (3, 4, 2)
    np.testing.assert_allclose(parts.sum(axis=-1), r, atol=1e-5)


def test_weighted_components_and_means_for_metrics():
    x = components(1, 2, gold=[100, 0], win=[1, -1])
    earned = weighted_components(x, RewardConfig(), np.array([600.0]))
    assert earned[0, 0, COMPONENT_INDEX["gold"]] == pytest.approx(0.36)
    assert earned[0, 0, COMPONENT_INDEX["win"]] == pytest.approx(5.0)
    means = component_means(earned)
    assert list(means) == list(REWARD_COMPONENTS)
    assert means["gold"] == pytest.approx(0.18)
    assert means["win"] == pytest.approx(0.0)


def test_bad_shapes_and_team_spirit_are_bad_input():
    with pytest.raises(BadInput, match="agents per game"):
        shape_rewards(np.zeros((1, 3, C)), RewardConfig(), np.zeros(1), team_size=1, team_spirit=0.0)
    with pytest.raises(BadInput, match="reward components"):
        shape_rewards(np.zeros((1, 2, C - 1)), RewardConfig(), np.zeros(1), team_size=1, team_spirit=0.0)
    with pytest.raises(BadInput, match="team spirit"):
        shape_rewards(np.zeros((1, 2, C)), RewardConfig(), np.zeros(1), team_size=1, team_spirit=1.5)
