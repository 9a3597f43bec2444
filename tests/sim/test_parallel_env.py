from fivectl.config.game import GameConfig
from fivectl.sim.parallel_env import MobaParallelEnv


def test_parallel_api_plays_a_game_to_the_time_limit():
    env = MobaParallelEnv(GameConfig(team_size=2, lanes=3, time_limit_s=3.0, time_limit_result="draw"))
    obs, infos = env.reset(seed=1)
    assert env.agents == ["radiant_0", "radiant_1", "dire_0", "dire_1"]
    assert set(obs["dire_1"]) == set(env.observation_space("dire_1"))
    steps = 0
    while env.agents:
        obs, rew, term, trunc, infos = env.step({a: env.sample_action(a) for a in env.agents})
        steps += 1
    assert steps == 23 and all(trunc.values()) and not any(term.values())
    assert all(info["winner"] == -1 for info in infos.values())
