"""Rollout worker cost: CPU seconds per sample of one worker filling fragments, with its share of bot games.

    .venv/bin/python benchmarks/worker_throughput.py --json
    .venv/bin/python benchmarks/worker_throughput.py --recipe recipes/five-v-five-quick.toml --json

One process, one torch thread, the recipe's games per worker, fragment length and ``selfplay.bot_fraction``
(``--bot-fraction`` to change it); the policy is the recipe's network, untrained, and every game not against a
bot is against the latest version (no pool yet). After one warm-up fragment (numba, first games), it fills
``--fragments`` fragments and reports the CPU time of the process per sample (``time.process_time``: the time other
jobs take on a shared machine does not count) and the split the worker itself measures: inference (the policies'
forward passes, the bots' decisions at decision steps) and simulation (the game steps, the bots on held steps,
rewards). To compare code versions, run this file with ``PYTHONPATH`` pointing at each checkout in turn.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from fivectl.config import load_recipe
from fivectl.model import PolicyNet
from fivectl.runtime.buffers import FragmentSlots, recipe_fragment_specs
from fivectl.runtime.params import ParameterStore
from fivectl.runtime.worker import RolloutWorker
from fivectl.schema import load_schema

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))


def measure(recipe_path: Path, fragments: int, bot_fraction: float | None, seed: int) -> dict:
    overrides = [] if bot_fraction is None else [f"selfplay.bot_fraction={bot_fraction}"]
    recipe = load_recipe(recipe_path, overrides)
    schema = load_schema(recipe.model.schema_version)
    torch.manual_seed(seed)
    net = PolicyNet(schema, recipe.model, recipe.game.team_size, obs_clip=recipe.train.obs_clip)
    params = ParameterStore.for_model(net, shared=False)
    fraction = recipe.selfplay.bot_fraction.start
    params.publish(net, 0, team_spirit=0.3, bot_fraction=fraction)
    worker = RolloutWorker(recipe, schema, params, seed=seed)
    views = FragmentSlots(recipe_fragment_specs(recipe, schema), 1, shared=False).slots[0]
    worker.fill(views)  # warm-up: compiled kernels, first games
    samples = 0
    infer = sim = 0.0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(fragments):
        stats = worker.fill(views)
        samples += views["reward"].size
        infer += stats.seconds_infer
        sim += stats.seconds_sim
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    return {
        "recipe": recipe.name,
        "games_per_worker": recipe.train.games_per_worker,
        "bot_fraction": fraction,
        "samples": samples,
        "cpu_us_per_sample": 1e6 * cpu / samples,
        "samples_per_cpu_s": samples / cpu,
        "samples_per_s": samples / wall,
        "inference_share": infer / (infer + sim),
        "simulation_share": sim / (infer + sim),
    }


def main() -> None:
    from _machine import cpu_model  # benchmarks/ is on the path when run as a script

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", type=Path, default=REPO / "recipes" / "quickstart.toml")
    parser.add_argument("--fragments", type=int, default=4, help="fragments timed after the warm-up one")
    parser.add_argument("--bot-fraction", type=float, default=None, help="default: the recipe's")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    result = measure(args.recipe, args.fragments, args.bot_fraction, args.seed)
    result["machine"] = cpu_model()
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key:>20}: {value:.4g}" if isinstance(value, float) else f"{key:>20}: {value}")


if __name__ == "__main__":
    main()
