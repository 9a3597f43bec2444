"""Play one game of the embedded MOBA with uniformly random valid actions through the PettingZoo-style API.

python examples/pettingzoo_random.py --team-size 5 --lanes 3 --seconds 120
"""

from __future__ import annotations

import argparse

from fivectl.config.game import GameConfig
from fivectl.sim.parallel_env import MobaParallelEnv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--team-size", type=int, default=1)
    ap.add_argument("--lanes", type=int, default=1, choices=(1, 3))
    ap.add_argument("--seconds", type=float, default=120.0, help="game time limit (game seconds)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    cfg = GameConfig(team_size=args.team_size, lanes=args.lanes, time_limit_s=args.seconds)
    env = MobaParallelEnv(cfg)
    obs, infos = env.reset(seed=args.seed)
    returns = {a: 0.0 for a in env.agents}
    invalid = 0
    steps = 0
    while env.agents:
        actions = {agent: env.sample_action(agent) for agent in env.agents}
        obs, rewards, terminations, truncations, infos = env.step(actions)
        for agent, r in rewards.items():
            returns[agent] += r
            invalid += infos[agent]["invalid_action"]
        steps += 1
    last = next(iter(infos.values()))
    outcome = {-1: "draw (time limit)", 0: "radiant wins", 1: "dire wins"}[last["winner"]]
    print(f"{steps} steps, {last['game_time']:.1f} game seconds: {outcome}; invalid actions: {invalid}")
    for agent, ret in returns.items():
        print(f"  {agent:10s} return {ret:+8.2f}")


if __name__ == "__main__":
    main()
