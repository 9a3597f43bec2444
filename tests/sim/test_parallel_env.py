import subprocess
import sys
import warnings

import numpy as np
import pytest
import shared_helpers

from fivectl.config.game import GameConfig
from fivectl.config.reward import RewardConfig
from fivectl.errors import BadInput
from fivectl.sim import COMPONENT_INDEX, REWARD_COMPONENTS
from fivectl.sim.parallel_env import INSTALL_HINT, PETTINGZOO_AVAILABLE, MobaParallelEnv
from tests.sim.conftest import place, slot_of

ATTACK = 2
FIXED = dict(
    randomize_initial_state=False,
    randomize_lineup=False,
    randomize_items=False,
    randomize_lanes=False,
    randomize_boss_health=False,
)


def make_env(game_cfg, **kwargs):
    """The adapter over ``game_cfg``; the test skips (or fails, per FIVECTL_REQUIRE) without the extra."""
    shared_helpers.require_optional("pettingzoo", PETTINGZOO_AVAILABLE, INSTALL_HINT)
    return MobaParallelEnv(game_cfg, **kwargs)


def play(env, seed=None):
    """Reset (with ``seed``) and play the game to its end with ``sample_action``; every step's outputs."""
    steps = [env.reset(seed=seed)]
    while env.agents:
        steps.append(env.step({a: env.sample_action(a) for a in env.agents}))
    return steps


def game_time_of(obs, env):
    return float(obs["global.float"][env.schema.group("global").float_columns()["game_time"]][0])


def test_fivectl_imports_without_pettingzoo_and_the_adapter_names_the_extra():
    script = """
import sys
import fivectl, fivectl.sim
assert "pettingzoo" not in sys.modules and "gymnasium" not in sys.modules, "imported eagerly"
sys.modules["pettingzoo"] = sys.modules["gymnasium"] = None  # as if the extra were not installed
from fivectl.errors import BadInput
from fivectl.sim.parallel_env import MobaParallelEnv
try:
    MobaParallelEnv()
except BadInput as e:
    print(e)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines() == [
        "the PettingZoo adapter needs pettingzoo and gymnasium: pip install 'fivectl[pettingzoo]'"
    ]


@pytest.mark.parametrize("team_size, lanes", [(1, 1), (5, 3)])
def test_pettingzoo_parallel_api_test_passes(team_size, lanes):
    env = make_env(GameConfig(team_size=team_size, lanes=lanes, time_limit_s=5.0))
    from pettingzoo import ParallelEnv
    from pettingzoo.test import parallel_api_test

    assert isinstance(env, ParallelEnv)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parallel_api_test(env, num_cycles=100)
    assert [str(w.message) for w in caught] == []  # the API test reports its softer findings as warnings


def test_the_spaces_contain_every_observation_and_sampled_action():
    env = make_env(GameConfig(team_size=2, lanes=3, time_limit_s=4.0))
    for obs, *_ in play(env, seed=5):
        for agent, o in obs.items():
            space = env.observation_space(agent)
            assert set(o) == set(space) == set(env.schema.array_specs())
            for key, arr in o.items():  # exact dtypes: the encoder's float32 / int32 / bool
                assert space[key].dtype == arr.dtype and space[key].contains(arr), key
    obs = env.reset(seed=5)[0]
    for agent in env.agents:
        action_space = env.action_space(agent)
        assert list(action_space.nvec) == [11, 4, env.schema.n_targets, 81]
        assert action_space.contains(env.sample_action(agent))
        primary = action_space.sample(mask=obs[agent]["action_mask"])[0]  # PettingZoo's masked sampling
        assert obs[agent]["action_mask"][primary]


def test_a_seeded_reset_replays_the_same_games():
    cfg = GameConfig(team_size=1, lanes=1, time_limit_s=3.0)
    first, second = make_env(cfg), make_env(cfg)
    seeded = play(first, seed=11)
    a, b = seeded + play(first), play(second, seed=11) + play(second)
    assert len(a) == len(b)
    for step_a, step_b in zip(a, b, strict=True):
        obs_a, obs_b = step_a[0], step_b[0]
        for agent in obs_a:
            for key in obs_a[agent]:
                np.testing.assert_array_equal(obs_a[agent][key], obs_b[agent][key])
        if len(step_a) == 5:
            assert step_a[1] == step_b[1]
    # an unseeded reset goes on to the stream's next game, another seed plays another game
    next_game = a[len(seeded)][0]["radiant_0"]["heroes.float"]
    other_seed = play(make_env(cfg), seed=12)[0][0]["radiant_0"]["heroes.float"]
    assert not np.array_equal(a[0][0]["radiant_0"]["heroes.float"], next_game)
    assert not np.array_equal(a[0][0]["radiant_0"]["heroes.float"], other_seed)


def test_rewards_are_the_raw_components_weighted_by_the_reward_config():
    weights = RewardConfig(gold=1.0, xp=0.5)
    env = make_env(GameConfig(team_size=1, lanes=1, time_limit_s=30.0), reward_cfg=weights)
    vector = np.array(weights.weights_in_order(REWARD_COMPONENTS), np.float32)  # off_lane: its schedule's start
    earned = 0.0
    for _, rewards, _, _, infos in play(env, seed=3)[1:]:
        for agent, r in rewards.items():
            assert infos[agent]["components"].shape == (len(REWARD_COMPONENTS),)
            assert r == pytest.approx(float(infos[agent]["components"] @ vector), abs=1e-5)
            earned += abs(r)
    assert earned > 0  # gold and xp flow in 30 seconds of lane


def test_a_draw_at_the_time_limit_truncates_with_the_finished_games_last_observation():
    env = make_env(GameConfig(team_size=2, lanes=3, time_limit_s=3.0, time_limit_result="draw"))
    steps = play(env, seed=1)
    assert env.agents == [] and len(steps) - 1 == 23
    obs, rewards, terminations, truncations, infos = steps[-1]
    assert set(obs) == set(rewards) == set(truncations) == {"radiant_0", "radiant_1", "dire_0", "dire_1"}
    assert all(truncations.values()) and not any(terminations.values())
    assert all(info["winner"] == -1 for info in infos.values())
    # not the next game's first observation (game time 0), which the core has already started
    assert game_time_of(obs["dire_1"], env) == game_time_of(steps[-2][0]["dire_1"], env) > 0
    with pytest.raises(BadInput, match="reset"):
        env.step({})
    with pytest.raises(BadInput, match="not playing"):
        env.sample_action("radiant_0")


def test_a_tiebreak_at_the_time_limit_terminates_with_a_winner_or_truncates_a_tie():
    env = make_env(GameConfig(team_size=1, lanes=1, time_limit_s=3.0, time_limit_result="tiebreak"))
    steps = play(env, seed=2)
    _, _, terminations, truncations, infos = steps[-1]
    winner = infos["radiant_0"]["winner"]
    assert len(steps) - 1 == 23
    if winner >= 0:
        assert all(terminations.values()) and not any(truncations.values())
    else:
        assert all(truncations.values()) and not any(terminations.values())


def test_destroying_the_ancient_terminates_every_agent_with_the_win_reward():
    env = make_env(GameConfig(team_size=1, lanes=1, **FIXED))
    env.reset(seed=0)
    env.step({})  # a step of no-ops: the game time is past 0
    core = env.moba_env
    L, s = core.layout, core.state
    ancient = int(L.ancient[1])
    for b in range(L.bld_end - L.bld_start):  # both tier-4 towers down: the ancient is vulnerable
        if L.b_team[b] == 1 and L.b_tier[b] == 4:
            s.alive[0, L.bld_start + b] = 0
    s.hp[0, ancient] = 1.0
    place(core, 0, s.x[0, ancient] - 100, s.y[0, ancient])
    core.observe()
    obs, rewards, terminations, truncations, infos = env.step(
        {"radiant_0": np.array([ATTACK, 0, slot_of(core, 0, ancient), 0])}
    )
    assert env.agents == []
    assert terminations == {"radiant_0": True, "dire_0": True} and not any(truncations.values())
    assert infos["radiant_0"]["winner"] == 0 and infos["radiant_0"]["invalid_action"] == 0
    win = COMPONENT_INDEX["win"]
    assert infos["radiant_0"]["components"][win] == 1 and infos["dire_0"]["components"][win] == -1
    assert rewards["radiant_0"] > 0 > rewards["dire_0"]
    assert game_time_of(obs["radiant_0"], env) > 0  # the finished game's observation, not the next game's


def test_bad_actions_and_agents_are_bad_input():
    env = make_env(GameConfig(team_size=1, lanes=1))
    with pytest.raises(BadInput, match="reset"):
        env.step({})
    env.reset(seed=0)
    with pytest.raises(BadInput, match="expected 4 integers"):
        env.step({"radiant_0": [1, 2]})
    with pytest.raises(BadInput, match="unknown"):
        env.step({"radiant_7": [0, 0, 0, 0]})
    with pytest.raises(BadInput, match="unknown agent"):
        env.observation_space("nobody")
    with pytest.raises(BadInput, match="seed"):
        env.reset(seed=-1)
