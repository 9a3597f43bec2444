"""Cost of the net-worth-rank and team-objective heads' training (paper D) on the quickstart recipe, one thread.

Times, on CPU: one learner gradient step on ``batch_windows`` 16-step windows with and without the two auxiliary
losses (labels carried in the windows vs none), the label computation of one learner batch, and the per-step
work of a rollout worker (``ObjectiveTracker`` before/after a step and the heroes' net worth).

    .venv/bin/python benchmarks/aux_overhead.py --json
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from fivectl.config import load_recipe
from fivectl.model import PolicyNet
from fivectl.model.synthetic import random_obs
from fivectl.rl.aux import aux_losses, aux_targets
from fivectl.rl.learner import FragmentBatch, PPOLearner
from fivectl.rl.schedules import Hyperparameters
from fivectl.schema import load_schema
from fivectl.sim import MobaEnv, ObjectiveTracker, hero_networth

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from learner_throughput import timed as median_seconds  # noqa: E402 - median of repeated calls after a warm-up


def fragment_batch(net: PolicyNet, steps: int, columns: int, n_objectives: int) -> FragmentBatch:
    g = torch.Generator().manual_seed(0)
    team = net.team_size
    zeros = torch.zeros(steps, columns)
    dones = torch.rand(steps, columns, generator=g) < 0.01
    dones = (
        dones.reshape(steps, -1, 2 * team).any(-1, keepdim=True).expand(-1, -1, 2 * team).reshape(steps, -1)
    )
    state = torch.zeros(steps // 16, 1, columns, net.cfg.lstm_size)
    return FragmentBatch(
        obs=random_obs(net.schema, (steps, columns), g),
        actions=torch.zeros(steps, columns, 4, dtype=torch.long),
        logprobs=zeros - 1.0,
        values=zeros,
        rewards=torch.randn(steps, columns, generator=g),
        dones=dones,
        first=torch.zeros(steps, columns, dtype=torch.bool),
        last_values=torch.zeros(columns),
        window_states=(state, state.clone()),
        networth=torch.rand(steps, columns, generator=g),
        objective_events=torch.rand(steps, columns, n_objectives, generator=g) < 0.01,
        last_networth_rank=torch.full((columns, team), 1.0 / team),
        last_objectives=torch.full((columns, n_objectives), 0.1),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default=str(REPO / "recipes" / "quickstart.toml"))
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    recipe = load_recipe(args.recipe)
    schema = load_schema(recipe.model.schema_version)
    t = recipe.train
    team = recipe.game.team_size
    n_obj = len(recipe.model.aux_objectives)
    torch.manual_seed(0)
    net = PolicyNet(schema, recipe.model, team)
    hp = Hyperparameters(learning_rate=1e-4, entropy_coef=0.01, team_spirit=0.0, horizon_s=10.0, gamma=0.99)
    # One minibatch = batch_windows windows of 16 steps: a fragment of T steps gives T/16 windows per column.
    columns = max(2 * team, t.batch_windows * 16 // t.fragment_length // (2 * team) * (2 * team))
    batch = fragment_batch(net, t.fragment_length, columns, n_obj)

    with_aux = PPOLearner(
        net,
        replace(t, minibatches=1, epochs=1),
        team_size=team,
        aux_loss_fn=aux_losses,
        objective_gamma=0.999,
    )
    without = PPOLearner(net, replace(t, minibatches=1, epochs=1), team_size=team)
    plain = replace(
        batch, networth=None, objective_events=None, last_networth_rank=None, last_objectives=None
    )
    w_aux = with_aux.prepare_windows(batch, hp.gamma)
    w_plain = without.prepare_windows(plain, hp.gamma)
    step_aux = median_seconds(lambda: with_aux.gradient_step(w_aux, 0.01), args.repeats)
    step_plain = median_seconds(lambda: without.gradient_step(w_plain, 0.01), args.repeats)
    weights = torch.ones(batch.steps, batch.columns)
    labels = median_seconds(lambda: aux_targets(batch, team, 0.999, weights), args.repeats)

    env = MobaEnv(recipe.game, t.games_per_worker, 0, schema)
    env.reset()
    tracker = ObjectiveTracker(env, recipe.model.aux_objectives)
    games = t.games_per_worker
    done, winner, game_time = np.zeros(games, bool), np.full(games, -1, np.int8), np.zeros(games, np.float32)

    def worker_step_extras() -> None:
        hero_networth(env.state)
        tracker.before_step()
        tracker.events(done, winner, game_time)

    extras = median_seconds(lambda: [worker_step_extras() for _ in range(100)], args.repeats) / 100
    sim_step = median_seconds(lambda: env.step(np.zeros((games, 2 * team, 4), np.int32)), args.repeats)
    result = {
        "recipe": Path(args.recipe).name,
        "windows_per_step": w_aux.advantages.shape[1],
        "gradient_step_s": {"with_aux": step_aux, "without_aux": step_plain, "ratio": step_aux / step_plain},
        "labels_per_batch_s": labels,
        "worker_step_extra_us": extras * 1e6,
        "sim_step_ms": sim_step * 1e3,
        "worker_extra_fraction_of_sim_step": extras / sim_step,
    }
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        for key, value in result.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
