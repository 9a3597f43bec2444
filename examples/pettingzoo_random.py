"""Play a few games of the embedded MOBA through its PettingZoo API, every hero taking random legal actions.

Trains nothing: it shows the loop a multi-agent learner drives. Needs ``pip install 'fivectl[pettingzoo]'``.

python examples/pettingzoo_random.py --games 3 --team-size 5 --lanes 3 --seconds 60
"""

from __future__ import annotations

import argparse
import sys

from fivectl.config.game import GameConfig
from fivectl.errors import FivectlError
from fivectl.sim.parallel_env import MobaParallelEnv

OUTCOMES = {-1: "draw (time limit)", 0: "radiant wins", 1: "dire wins"}


def play_game(env: MobaParallelEnv, seed: int | None) -> tuple[dict[str, float], dict, int]:
    """One game to its end: each agent's return, the last step's info of one agent, the number of steps."""
    observations, infos = env.reset(seed=seed)
    returns = dict.fromkeys(env.agents, 0.0)
    steps = 0
    while env.agents:
        # A legal action from each live agent's masks: a primary action_mask allows, a target target_mask allows
        # for it. (env.action_space(agent).sample(mask=observations[agent]["action_mask"]) masks the primary only.)
        actions = {agent: env.sample_action(agent) for agent in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(actions)
        for agent, reward in rewards.items():
            returns[agent] += reward
        steps += 1
    return returns, next(iter(infos.values())), steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=3)
    ap.add_argument("--team-size", type=int, default=1)
    ap.add_argument("--lanes", type=int, default=1, choices=(1, 3))
    ap.add_argument("--seconds", type=float, default=60.0, help="game time limit (game seconds)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the first game; the others follow from it")
    args = ap.parse_args()

    cfg = GameConfig(team_size=args.team_size, lanes=args.lanes, time_limit_s=args.seconds)
    try:
        env = MobaParallelEnv(cfg)
    except FivectlError as e:
        sys.exit(f"error: {e}")
    first = env.possible_agents[0]
    print(f"agents: {', '.join(env.possible_agents)}; action space {env.action_space(first)}")
    for game in range(args.games):
        returns, last, steps = play_game(env, seed=args.seed if game == 0 else None)
        print(f"game {game}: {steps} steps, {last['game_time']:.1f} game seconds, {OUTCOMES[last['winner']]}")
        print("  returns: " + ", ".join(f"{agent} {ret:+.2f}" for agent, ret in returns.items()))
    env.close()


if __name__ == "__main__":
    main()
