"""Schema v4: v3 plus the state of every lane's buildings, checked against the game state and through surgery."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fivectl.config.model import ModelConfig
from fivectl.model import PolicyNet
from fivectl.schema import load_schema
from fivectl.surgery.add_obs import plan_add_obs
from fivectl.surgery.plan import apply_model
from fivectl.surgery.schemas import added_fields, superset_errors
from tests.schema.test_v3 import model_outputs, value, with_seen_normalizers
from tests.sim.conftest import make_env

LANE_FIELDS = ["global.ally_lane_hp", "global.ally_front_hp", "global.enemy_lane_standing"]


@pytest.fixture(scope="module")
def v4():
    return load_schema(4)


@pytest.mark.parametrize("old_version", [2, 3])
def test_v4_only_appends_the_lane_fields(v4, old_version):
    """What makes ``surgery add-obs`` to v4 exact: v2's and v3's groups and fields unchanged, in order; v4 adds
    the three lane fields at the end of ``global`` (and, from v2, v3's fields)."""
    old = load_schema(old_version)
    assert superset_errors(old, v4) == []
    added = added_fields(old, v4)
    from_v3 = added_fields(old, load_schema(3)) if old_version == 2 else []
    assert sorted(added) == sorted(from_v3 + LANE_FIELDS)
    assert [f.name for f in v4.group("global").fields[-3:]] == [f.split(".")[1] for f in LANE_FIELDS]


def lane_buildings(env, team, lane):
    """The unit indices of ``team``'s towers (t1, t2, t3) and barracks on layout lane ``lane``."""
    L = env.layout
    return [
        L.bld_start + b
        for b in range(L.bld_end - L.bld_start)
        if L.b_team[b] == team and L.b_lane[b] == lane
    ]


def test_lane_fields_at_the_start_of_a_three_lane_game(v4):
    env = make_env(v4, 1, team_size=5, lanes=3)
    obs = env.observe()
    for agent in range(10):
        assert value(obs, v4, "global", "ally_lane_hp", agent=agent).tolist() == [1.0, 1.0, 1.0]
        assert value(obs, v4, "global", "ally_front_hp", agent=agent).tolist() == [1.0, 1.0, 1.0]
        assert value(obs, v4, "global", "enemy_lane_standing", agent=agent).tolist() == [4.0, 4.0, 4.0]


def test_a_one_lane_map_fills_the_first_lane_only(v4):
    env = make_env(v4, 1)
    obs = env.observe()
    for agent in range(2):
        assert value(obs, v4, "global", "ally_lane_hp", agent=agent).tolist() == [1.0, 0.0, 0.0]
        assert value(obs, v4, "global", "enemy_lane_standing", agent=agent).tolist() == [4.0, 0.0, 0.0]


def test_a_far_lane_under_attack_is_seen_by_every_hero_of_its_team(v4):
    """Team 0's top t1 tower at a quarter HP and its mid t1 and t2 fallen: every team-0 hero, wherever it is, sees
    those lanes' HP drop and their front building; team 1 sees only that two buildings of mid fell."""
    env = make_env(v4, 1, team_size=5, lanes=3)
    s = env.state
    top, mid = lane_buildings(env, 0, 0), lane_buildings(env, 0, 1)
    full = {u: float(s.max_hp[0, u]) for u in top + mid}
    s.hp[0, top[0]] = 0.25 * full[top[0]]
    for u in mid[:2]:
        s.alive[0, u] = 0
        s.hp[0, u] = 0.0
    obs = env.observe()
    top_hp = sum(full[u] for u in top[1:]) + 0.25 * full[top[0]]
    mid_hp = sum(full[u] for u in mid[2:])
    for agent in range(5):
        lane_hp = value(obs, v4, "global", "ally_lane_hp", agent=agent)
        assert lane_hp == pytest.approx([top_hp / sum(full[u] for u in top), mid_hp / sum(full[u] for u in mid), 1.0])
        assert value(obs, v4, "global", "ally_front_hp", agent=agent) == pytest.approx([0.25, 1.0, 1.0])
        assert value(obs, v4, "global", "enemy_lane_standing", agent=agent).tolist() == [4.0, 4.0, 4.0]
    for agent in range(5, 10):
        assert value(obs, v4, "global", "ally_lane_hp", agent=agent).tolist() == [1.0, 1.0, 1.0]
        assert value(obs, v4, "global", "enemy_lane_standing", agent=agent).tolist() == [4.0, 2.0, 4.0]
    # the mid t3 tower at half HP is now the front; with every tower down, the barracks; with it, nothing
    s.hp[0, mid[2]] = 0.5 * full[mid[2]]
    assert value(env.observe(), v4, "global", "ally_front_hp", agent=0)[1] == pytest.approx(0.5)
    s.alive[0, mid[2]] = 0
    assert value(env.observe(), v4, "global", "ally_front_hp", agent=0)[1] == pytest.approx(1.0)
    s.alive[0, mid[3]] = 0
    obs = env.observe()
    assert value(obs, v4, "global", "ally_front_hp", agent=0)[1] == 0.0
    assert value(obs, v4, "global", "ally_lane_hp", agent=0)[1] == 0.0
    assert value(obs, v4, "global", "enemy_lane_standing", agent=5)[1] == 0.0


def test_both_teams_see_a_mirrored_game_alike(v4):
    """The lane fields are per team, not per map side: damage the same lane's front tower of each team and each
    team's heroes see the same values in their own frame."""
    env = make_env(v4, 1, team_size=5, lanes=3)
    s = env.state
    for team in (0, 1):
        front = lane_buildings(env, team, 2)[0]
        s.hp[0, front] = 0.4 * s.max_hp[0, front]
    obs = env.observe()
    for field in ("ally_lane_hp", "ally_front_hp", "enemy_lane_standing"):
        assert np.array_equal(value(obs, v4, "global", field, agent=0), value(obs, v4, "global", field, agent=5))
    assert value(obs, v4, "global", "ally_front_hp", agent=0)[2] == pytest.approx(0.4)


def test_add_obs_from_v2_to_v4_keeps_a_models_outputs_on_real_games():
    """A v2 model carried to v4 gives the same outputs on v4's encoding of a game as on v2's, with the new
    columns at any value."""
    v2, v4 = load_schema(2), load_schema(4)
    game = dict(team_size=2, lanes=3, randomize_lineup=True, randomize_initial_state=True)
    e2, e4 = make_env(v2, 2, seed=5, **game), make_env(v4, 2, seed=5, **game)
    rng = np.random.default_rng(0)
    for _ in range(40):
        actions = e2.sample_random_actions(rng)
        o2, *_ = e2.step(actions)
        o4, *_ = e4.step(actions)
    for key, a in o2.items():  # v2's columns encoded as v2 does
        assert np.array_equal(o4[key][..., : a.shape[-1]], a), key
    cfg = ModelConfig(unit_embed=8, unit_hidden=16, cat_embed=4, grid_channels=4, fc_size=32, lstm_size=16)
    torch.manual_seed(0)
    parent = with_seen_normalizers(PolicyNet(v2, cfg, 2).eval())
    child = PolicyNet(v4, cfg, 2)
    child.load_state_dict(apply_model(plan_add_obs(v2, v4, cfg, 2, new_label="v4"), dict(parent.state_dict())))
    child.eval()
    x = o4["global.float"]
    x[..., v2.group("global").n_float :] = rng.uniform(0, 5, x[..., v2.group("global").n_float :].shape)

    for want, got in zip(model_outputs(parent, o2), model_outputs(child, o4), strict=True):
        assert torch.allclose(want, got, atol=1e-5)
