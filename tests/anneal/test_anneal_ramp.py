"""The anneal's ramp and guard without the game: fraction as a function of samples, reverts and slowdowns, the
state through a checkpoint's JSON, and the trainer's hook driven by a fake guard (paper B)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fivectl.anneal.controller import AnnealController
from fivectl.anneal.guard import guard_cadence
from fivectl.anneal.ramp import GUARD_OK, GUARD_REVERT, RampState
from fivectl.config import load_recipe, recipe_from_dict
from fivectl.errors import FivectlError
from fivectl.runtime.game_change_hook import variant_share


def ramp(over: float = 1000.0, baseline_mu: float = 20.0, guard: float = 2.0, start: int = 500) -> RampState:
    return RampState(
        change="canary-mirror",
        started="t0",
        over=over,
        guard=guard,
        slowdown=0.5,
        baseline={"version": 3, "mu": baseline_mu, "sigma": 1.0},
        start_samples=start,
        start_version=3,
        samples=start,
    )


def test_fraction_rises_linearly_with_samples_and_stops_at_one():
    r = ramp(over=1000, start=500)
    for samples, expected in [(500, 0.0), (750, 0.25), (1000, 0.5), (1499, 0.999), (1500, 1.0), (9000, 1.0)]:
        r.advance(samples)
        assert r.fraction == pytest.approx(expected)
    with pytest.raises(FivectlError):
        r.advance(10)


def test_a_drop_beyond_the_guard_reverts_to_the_last_good_fraction_and_halves_the_speed():
    r = ramp(over=1000, baseline_mu=20.0, guard=2.0, start=0)
    r.advance(300)
    ok = r.judge(version=5, fraction=0.2, mu=18.5, sigma=1.0)  # 1.5 below: within the guard
    assert ok.action == GUARD_OK and r.last_good == pytest.approx(0.2)
    r.advance(600)
    bad = r.judge(version=8, fraction=0.5, mu=17.0, sigma=1.0)  # 3 below: revert
    assert bad.action == GUARD_REVERT and bad.drop == pytest.approx(3.0)
    assert r.fraction == pytest.approx(0.2) and r.speed == pytest.approx(0.5)
    assert (bad.fraction_after, bad.speed_after) == (pytest.approx(0.2), 0.5)
    r.advance(1000)  # 400 samples at half speed: +0.2
    assert r.fraction == pytest.approx(0.4)
    r.judge(version=12, fraction=0.4, mu=10.0, sigma=1.0)
    assert r.speed == pytest.approx(0.25) and r.reverts == 2


def test_state_survives_a_checkpoint_as_json():
    r = ramp(start=0)
    r.advance(400)
    r.judge(version=4, fraction=0.3, mu=30.0, sigma=2.0)
    r.pending = {"version": 8, "fraction": 0.4}
    back = RampState.from_json(json.loads(json.dumps(r.to_json())))
    assert back == r and back.fraction == r.fraction
    back.advance(600)
    r.advance(600)
    assert back.fraction == r.fraction


class FakeGuard:
    """Rates a version synchronously with a given function (what a canary's TrueSkill would do)."""

    def __init__(self, rate):
        self.rate = rate
        self.submitted: list[int] = []

    def busy(self) -> bool:
        return False

    def submit(self, version: int) -> bool:
        self.submitted.append(version)
        return True

    def result(self, version: int):
        return {"mu": self.rate(version), "sigma": 1.0}

    def wait(self, timeout_s: float) -> bool:
        return True

    def close(self, wait_s: float = 0.0) -> None:
        pass


def controller(rate, every: int = 2, over: float = 640.0) -> tuple[AnnealController, FakeGuard]:
    recipe = recipe_from_dict(
        {
            "anneal": {"change": "canary-mirror", "over_samples": over, "guard": 2.0},
            "eval": {"every_versions": every},
        }
    )
    guard = FakeGuard(rate)
    meta = {"change": "canary-mirror", "started": "t0", "baseline": {"version": 0, "mu": 20.0, "sigma": 1.0}}
    return AnnealController(recipe, meta, guard), guard


def drive(
    c: AnnealController, iterations: int, samples_per_iteration: int = 64, start: int = 0
) -> list[float]:
    """What the trainer does each iteration: one version, its samples, the guard; the published fractions."""
    fractions, saved = [], []
    for i in range(1, iterations + 1):
        c.advance(start + i * samples_per_iteration, i)
        c.guard(i, lambda version=i: saved.append(version))
        c.metrics([])
        fractions.append(c.fraction())
    return fractions


def test_the_guard_reverts_a_change_that_hurts_and_the_ramp_slows():
    # a canary: the more games run it, the lower the rating under it
    c, guard = controller(lambda version: 20.0 - 40.0 * c.fraction())
    c.load_state_dict(None, samples=0, version=0)
    fractions = drive(c, 20)
    state = c.state
    assert guard.submitted[:2] == [2, 4]  # every eval.every_versions
    assert state.reverts >= 1
    first = state.history[0]  # v2, trained at fraction 0.2, rated 12 under the canary: 8 below the start
    assert (first.version, first.action, first.fraction) == (2, GUARD_REVERT, pytest.approx(0.2))
    assert (first.fraction_after, first.speed_after) == (0.0, 0.5)  # nothing was good yet: back to 0
    assert max(fractions) < 0.3  # it never got far: every rise is caught and undone
    row = c.metrics([])
    assert row["anneal_reverts"] == state.reverts and row["anneal_speed"] < 1.0


def test_a_harmless_change_reaches_every_game():
    c, _ = controller(lambda version: 20.0)
    c.load_state_dict(None, samples=0, version=0)
    fractions = drive(c, 12)
    assert fractions[-1] == 1.0 and c.state.reverts == 0
    assert all(b >= a for a, b in zip(fractions, fractions[1:], strict=False))


def test_resume_restores_the_exact_fraction_and_restarts_a_pending_guard():
    c, _ = controller(lambda version: 20.0)
    c.load_state_dict(None, samples=100, version=0)
    c.advance(420, 5)
    c.state.pending = {"version": 4, "fraction": 0.25}
    saved = json.loads(json.dumps(c.state_dict()))
    resumed, guard = controller(lambda version: 20.0)
    resumed.load_state_dict(saved, samples=420, version=5)
    assert resumed.fraction() == c.fraction() == pytest.approx(320 / 640)
    resumed.guard(5, lambda: None)
    assert guard.submitted == [4]  # the evaluation the kill interrupted starts again
    # a checkpoint of an earlier anneal (another start) does not carry over: a new ramp from 0
    other, _ = controller(lambda version: 20.0)
    other.meta = {**other.meta, "started": "t1"}
    other.load_state_dict(saved, samples=420, version=5)
    assert other.fraction() == 0.0 and other.state.start_samples == 420


def test_variant_share_counts_trained_samples_in_changed_games():
    T, G, A = 4, 2, 2  # 2 games of 1v1: agents [g0 t0, g0 t1, g1 t0, g1 t1]
    train = np.ones((T, G * A), dtype=bool)
    train[:, 1] = False  # a past version plays game 0's team 1
    variant = np.zeros((T, G), dtype=bool)
    variant[:, 0] = True
    assert variant_share([{"train": train, "variant": variant}]) == pytest.approx(4 / 12)
    assert variant_share([{"train": train}]) is None


def test_the_guard_cadence_comes_from_the_recipe_without_a_setting():
    quickstart = load_recipe("recipes/quickstart.toml")
    assert guard_cadence(quickstart) == (quickstart.train.milestone_every, "train.milestone_every")
    no_milestones = load_recipe("recipes/quickstart.toml", ["train.milestone_every=0"])
    assert guard_cadence(no_milestones) == (
        10 * no_milestones.train.checkpoint_every, "10 x train.checkpoint_every"
    )
    evaluated = load_recipe("recipes/quickstart.toml", ["eval.every_versions=7"])
    assert guard_cadence(evaluated) == (7, "eval.every_versions")  # what an anneal started before used
    chosen = load_recipe("recipes/quickstart.toml", ["eval.every_versions=7", "anneal.guard_every=30"])
    assert guard_cadence(chosen) == (30, "anneal.guard_every")
    c, guard = controller(lambda version: 20.0, every=0)  # no eval.every_versions: the guard still runs
    c.load_state_dict(None, samples=0, version=0)
    drive(c, 100)
    assert guard.submitted == [100]  # the default recipe's milestones
