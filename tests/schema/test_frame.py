"""The team-relative frame (schema v2): team 1 sees and steers in the reflected map, so it looks like team 0."""

from __future__ import annotations

import numpy as np
import pytest

from fivectl.schema import load_schema
from fivectl.schema.frame import mirrored_offsets
from fivectl.sim import MAP_SIZE, BotMemory, bot_actions
from tests.sim.conftest import make_env

DIRECTIONAL = ("heroes", "creeps", "buildings", "neutrals")


@pytest.fixture(scope="module")
def world():
    return load_schema(1)


@pytest.fixture(scope="module")
def team():
    return load_schema(2)


def columns(schema, group, *names):
    cols = schema.group(group).float_columns()
    return [cols[n].start for n in names]


def test_v2_is_v1_in_the_team_frame(world, team):
    assert team.frame == "team" and world.frame == "world"
    assert team.groups == world.groups and team.action == world.action


def test_offset_reflection_is_an_involution_that_swaps_and_negates():
    m = mirrored_offsets(9)
    assert (m[m] == np.arange(81)).all()
    assert m[40] == 40  # the hero's own cell
    cx, cy = 3, -2  # index = (cy + 4) * 9 + (cx + 4)
    assert m[(cy + 4) * 9 + (cx + 4)] == (-cx + 4) * 9 + (-cy + 4)


@pytest.mark.parametrize(("team_size", "lanes"), [(1, 1), (5, 3)])
def test_both_teams_see_the_same_start_in_the_team_frame(world, team, team_size, lanes):
    """The start is mirror-symmetric (tests/sim/test_symmetry.py): in the team frame, hero i of team 1 sees
    exactly what hero i of team 0 sees, wherever a direction is involved; in the world frame it does not."""
    obs = {s.version: make_env(s, team_size=team_size, lanes=lanes).observe() for s in (world, team)}
    k = team_size
    world_differs = []
    for group in DIRECTIONAL:
        dx, dy = columns(team, group, "dx", "dy")
        a1, a2 = obs[1][f"{group}.float"][0], obs[2][f"{group}.float"][0]  # [A, count, F]
        # as sets of rows: units at equal distance may come in either order
        np.testing.assert_allclose(rows(a2[:k, :, [dx, dy]]), rows(a2[k:, :, [dx, dy]]), atol=1e-5, err_msg=group)
        world_differs.append(not np.allclose(a1[:k, :, [dx, dy]], a1[k:, :, [dx, dy]], atol=1e-5))
    assert any(world_differs)  # in the world frame the two sides see different offsets
    x, y = columns(team, "self", "x", "y")
    s2 = obs[2]["self.float"][0]
    np.testing.assert_allclose(s2[:k, [x, y]], s2[k:, [x, y]], atol=1e-5)
    s1 = obs[1]["self.float"][0]
    np.testing.assert_allclose(s1[k:, x], MAP_SIZE / 1000 - s1[:k, y], atol=1e-5)
    terrain2, terrain1 = obs[2]["terrain.float"][0], obs[1]["terrain.float"][0]
    np.testing.assert_array_equal(terrain2[:k], terrain2[k:])
    assert not np.array_equal(terrain1[:k], terrain1[k:])  # the world frame differs: the reflection matters


def rows(a):
    """[agents, count, 2] with each agent's rows sorted (rounded so float noise does not reorder them)."""
    a = np.round(a, 4)
    return np.stack([x[np.lexsort(x.T[::-1])] for x in a])


def test_team0_is_untouched_and_team1_masks_are_unchanged(world, team):
    a, b = make_env(world, seed=3, randomize_initial_state=True), make_env(team, seed=3, randomize_initial_state=True)
    rng = np.random.default_rng(0)
    for _ in range(60):
        actions = a.sample_random_actions(rng)
        oa, *_ = a.step(actions)
        ob, *_ = b.step(team_frame_actions(actions, 1))
    for key in oa:
        np.testing.assert_array_equal(oa[key][:, :1], ob[key][:, :1], err_msg=key)
        if key.endswith("mask") or key.endswith(".cat"):
            np.testing.assert_array_equal(oa[key][:, 1:], ob[key][:, 1:], err_msg=key)


def team_frame_actions(actions, team_size):
    """World-frame actions with team 1's offsets expressed in its team frame (what a v2 policy would give)."""
    out = actions.copy()
    out[:, team_size:, 3] = mirrored_offsets(9)[out[:, team_size:, 3]]
    return out


def test_the_same_offset_moves_both_heroes_in_mirrored_directions(team):
    env = make_env(team)
    s = env.state
    before = np.array([[s.x[0, h], s.y[0, h]] for h in (0, 1)])
    move = team.action.primary.index("move")
    offset = (4 + 4) * 9 + (4 + 2)  # cx = +2, cy = +4: forward along the lane, a little to the right
    actions = np.zeros((1, 2, 4), np.int32)
    actions[0, :, 0] = move
    actions[0, :, 3] = offset
    for _ in range(5):
        env.step(actions)
    after = np.array([[s.x[0, h], s.y[0, h]] for h in (0, 1)])
    d0, d1 = after[0] - before[0], after[1] - before[1]
    assert np.linalg.norm(d0) > 50 and np.linalg.norm(d1) > 50
    mirrored = np.array([-d1[1], -d1[0]])
    cos = mirrored @ d0 / (np.linalg.norm(mirrored) * np.linalg.norm(d0))
    assert cos > 0.999


@pytest.mark.parametrize("level", ["easy", "medium"])
def test_bots_play_the_same_game_in_either_frame(world, team, level):
    """Bots aim in the world frame and convert to their team's frame, the env converts back: same game."""
    envs = [make_env(s, num_games=2, seed=5, randomize_initial_state=True) for s in (world, team)]
    memories = [[BotMemory.empty(2, 1) for _ in range(2)] for _ in envs]
    sides = [np.zeros(2, np.int64), np.ones(2, np.int64)]
    obs = [env.observe() for env in envs]
    for _ in range(300):
        for i, env in enumerate(envs):
            actions = np.zeros((2, 2, 4), np.int32)
            for side in (0, 1):
                actions[:, side : side + 1] = bot_actions(env, obs[i], sides[side], level, memories[i][side], None)
            obs[i], *_ = env.step(actions)
    for name in ("x", "y", "hp"):
        np.testing.assert_array_equal(getattr(envs[0].state, name), getattr(envs[1].state, name), err_msg=name)
