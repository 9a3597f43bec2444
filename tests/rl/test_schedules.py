import pytest

from fivectl.config import recipe_from_dict
from fivectl.config.fields import Schedule
from fivectl.errors import BadInput
from fivectl.rl.gae import gamma_from_horizon
from fivectl.rl.schedules import Progress, hyperparameters_at, schedule_value, step_seconds


def recipe():
    return recipe_from_dict(
        {
            "game": {"fps": 30, "frameskip": 4},
            "train": {
                "learning_rate": {"points": [[0, 1e-3], [1000, 0.0]], "interp": "linear", "unit": "samples"},
                "entropy_coef": {"points": [[0, 0.01], [10, 0.001]], "interp": "step", "unit": "versions"},
                "horizon_s": {"points": [[0, 6.0], [1000, 180.0]], "unit": "samples"},
            },
            "reward": {"team_spirit": {"points": [[0, 0.0], [20, 1.0]], "unit": "versions"}},
        }
    )


def test_each_schedule_reads_its_own_unit():
    hp = hyperparameters_at(recipe(), Progress(samples=250, versions=10))
    assert hp.learning_rate == pytest.approx(7.5e-4)  # linear in samples
    assert hp.entropy_coef == pytest.approx(0.001)  # step in versions, reached at 10
    assert hp.team_spirit == pytest.approx(0.5)  # linear in versions
    assert hp.horizon_s == pytest.approx(6.0 + 0.25 * 174.0)
    assert hp.gamma == pytest.approx(gamma_from_horizon(hp.horizon_s, 4 / 30))
    early = hyperparameters_at(recipe(), Progress(samples=0, versions=9))
    assert early.entropy_coef == pytest.approx(0.01) and early.learning_rate == pytest.approx(1e-3)
    late = hyperparameters_at(recipe(), Progress(samples=10**9, versions=10**6))
    assert late.learning_rate == 0.0 and late.horizon_s == pytest.approx(180.0) and late.team_spirit == 1.0


def test_value_warmup_holds_for_the_runs_first_samples():
    warm = recipe_from_dict({"train": {"value_warmup_samples": 1000}})
    assert hyperparameters_at(warm, Progress(samples=999)).value_only
    assert not hyperparameters_at(warm, Progress(samples=1000)).value_only
    assert not hyperparameters_at(recipe(), Progress(samples=0)).value_only  # default 0: none


def test_learning_rate_is_zero_during_the_warm_period_after_surgery():
    hp = hyperparameters_at(recipe(), Progress(samples=0, versions=12), warmup_end_version=13)
    assert hp.learning_rate == 0.0 and hp.entropy_coef == pytest.approx(0.001)
    assert (
        hyperparameters_at(recipe(), Progress(samples=0, versions=13), warmup_end_version=13).learning_rate
        > 0
    )


def test_step_seconds_and_unknown_unit():
    assert step_seconds(recipe()) == pytest.approx(0.1333, abs=1e-4)
    every_other = recipe_from_dict({"game": {"fps": 30, "frameskip": 4}, "model": {"decide_every": 2}})
    assert step_seconds(every_other) == pytest.approx(0.2667, abs=1e-4)  # the discount counts game seconds
    with pytest.raises(BadInput):
        schedule_value(Schedule(points=[[0.0, 1.0]], unit="hours"), Progress())


def test_the_lane_penalty_is_a_schedule_and_off_by_default():
    lifted = recipe_from_dict(
        {"reward": {"off_lane": {"points": [[0, -0.1], [1000, -0.1], [2000, 0.0]], "unit": "samples"}}}
    )
    assert hyperparameters_at(lifted, Progress(samples=500)).off_lane == pytest.approx(-0.1)
    assert hyperparameters_at(lifted, Progress(samples=1500)).off_lane == pytest.approx(-0.05)
    assert hyperparameters_at(lifted, Progress(samples=10**9)).off_lane == 0.0
    assert hyperparameters_at(recipe(), Progress(samples=500)).off_lane == 0.0
