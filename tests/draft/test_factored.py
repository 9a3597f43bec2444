"""The factored first frame computes what the direct path computes: the same P(team 0 wins) for every lineup
(1v1, 2v2, 5v5 on three lanes with several lane samples), the same tables from ``precompute``, and a fallback to
the direct path when the factorization does not hold."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from fivectl.draft import table as table_module
from fivectl.draft.factored import FactoredFirstFrame, team_ranks
from fivectl.draft.lineups import LineupSpace, colex_subsets
from fivectl.draft.model import load_draft_model
from fivectl.draft.table import make_rater, open_table, precompute
from fivectl.errors import BadInput
from fivectl.sim import HERO_NAMES
from tests.draft.conftest import make_policy_run


def test_team_ranks_are_the_colex_order_of_teams():
    space = LineupSpace(range(9), 3)
    teams = colex_subsets(9, 3)
    np.testing.assert_array_equal(team_ranks(teams, space.binom), np.arange(len(teams)))


def five_v_five_model(tmp_path, pool_size: int = 11, lanes: int = 3):
    """The tiny network on a 5v5 game of ``pool_size`` heroes, three lanes with random lane assignments."""
    run = make_policy_run(tmp_path / "run5v5", team_size=5)
    model = load_draft_model(f"{run.path}@latest")
    game = replace(model.game, lanes=lanes, randomize_lanes=True, hero_pool=list(HERO_NAMES[:pool_size]))
    return replace(model, game=game)


@pytest.mark.parametrize("lane_samples", [1, 3])
def test_factored_equals_direct_on_a_5v5_pool_with_random_lanes(tmp_path, lane_samples):
    model = five_v_five_model(tmp_path)
    space = LineupSpace(range(11), 5)
    rater = FactoredFirstFrame(model, space, batch=96, seed=5, lane_samples=lane_samples)
    assert rater.lane_samples == lane_samples
    assert len({tuple(lanes.ravel()) for lanes in rater.lanes}) == lane_samples  # the draws differ
    rows = np.random.default_rng(1).choice(space.size, 96, replace=False)
    lineups = np.concatenate([space.lineups(int(i), int(i) + 1) for i in rows])
    factored, direct = rater.win_probs(lineups), rater.direct.win_probs(lineups)
    np.testing.assert_allclose(factored, direct, rtol=0, atol=2e-6)
    assert direct.std() > 1e-4  # the lineups are told apart, so equality means something
    assert rater.check(lineups[:10]) < 2e-6


@pytest.mark.parametrize("team_size", [1, 2])
def test_factored_equals_direct_on_every_lineup_of_small_games(tmp_path, team_size):
    run = make_policy_run(tmp_path / f"run{team_size}", team_size=team_size)
    model = load_draft_model(f"{run.path}@latest")
    space = LineupSpace(range(17) if team_size == 1 else range(8), team_size)
    rater = FactoredFirstFrame(model, space, batch=space.size)
    lineups = space.lineups(0, space.size)
    np.testing.assert_allclose(rater.win_probs(lineups), rater.direct.win_probs(lineups), rtol=0, atol=2e-6)


def test_precompute_factored_and_direct_give_the_same_table(tmp_path):
    model = five_v_five_model(tmp_path, pool_size=10)
    for method in ("factored", "direct"):
        report = precompute(
            model, tmp_path / f"{method}.zarr", chunk=64, batch=32, lane_samples=2, method=method
        )
        assert report.complete and report.method == method
        assert report.lineups == math.comb(10, 5)  # C(10,5) x C(5,5)
    factored, direct = (open_table(tmp_path / f"{m}.zarr").values for m in ("factored", "direct"))
    np.testing.assert_allclose(factored, direct, rtol=0, atol=2e-6)


def test_a_factorization_that_disagrees_falls_back_to_the_direct_path(tmp_path, monkeypatch):
    model = five_v_five_model(tmp_path, pool_size=10, lanes=1)
    space = LineupSpace(range(10), 5)
    rater, method = make_rater(model, space, 16, 0, 1, "factored")
    assert method == "factored" and isinstance(rater, FactoredFirstFrame)

    exact = FactoredFirstFrame.win_probs
    monkeypatch.setattr(FactoredFirstFrame, "win_probs", lambda self, lineups: exact(self, lineups) + 1e-3)
    rater, method = make_rater(model, space, 16, 0, 1, "factored")
    assert method == "direct" and not isinstance(rater, FactoredFirstFrame)
    assert table_module.METHODS == ("factored", "direct")
    with pytest.raises(BadInput, match="--method"):
        make_rater(model, space, 16, 0, 1, "fast")


def test_lineups_must_be_ascending_pool_heroes(tmp_path):
    run = make_policy_run(tmp_path / "run2", team_size=2)
    model = load_draft_model(f"{run.path}@latest")
    rater = FactoredFirstFrame(model, LineupSpace(range(17), 2), batch=4)
    with pytest.raises(BadInput, match="ascending"):
        rater.win_probs(np.array([[[3, 1], [4, 5]]]))
    with pytest.raises(BadInput, match="do not fit"):
        rater.win_probs(LineupSpace(range(17), 2).lineups(0, 5))
