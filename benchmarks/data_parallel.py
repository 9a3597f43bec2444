"""Data-parallel learners on CPU (gloo, loopback): one learner on a batch against N learners on its shares.

Times ``PPOLearner.train_iteration`` on the quickstart network over one synthetic learner batch: one process on
the whole batch, then N processes (``torch.distributed``, gloo) on 1/N of it each, with the gradient all-reduce,
the union's advantage normalization and the normalizer broadcast of ``fivectl train --learners N``. Also times
the gradient all-reduce alone (one flat buffer of every parameter). One torch thread per process.

    .venv/bin/python benchmarks/data_parallel.py --learners 2 --json
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from fivectl.config import load_recipe
from fivectl.model import PolicyNet
from fivectl.rl.aux import aux_losses
from fivectl.rl.data_parallel import DataParallel
from fivectl.rl.learner import PPOLearner, select_batch_columns
from fivectl.rl.schedules import Hyperparameters
from fivectl.runtime.distributed import team_shares
from fivectl.schema import load_schema

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from aux_overhead import fragment_batch  # noqa: E402 - the benchmarks' synthetic learner batch

HP = Hyperparameters(learning_rate=1e-4, entropy_coef=0.01, team_spirit=0.0, horizon_s=10.0, gamma=0.99)


def setup(columns: int, minibatches: int, data_parallel: DataParallel | None = None):
    cfg = load_recipe(REPO / "recipes" / "quickstart.toml")
    torch.manual_seed(0)
    net = PolicyNet(load_schema(cfg.model.schema_version), cfg.model, cfg.game.team_size)
    batch = fragment_batch(net, cfg.train.fragment_length, columns, len(cfg.model.aux_objectives))
    train = replace(cfg.train, bptt=16, epochs=1, minibatches=minibatches)
    learner = PPOLearner(
        net,
        train,
        team_size=cfg.game.team_size,
        aux_loss_fn=aux_losses,
        objective_gamma=0.999,
        generator=torch.Generator().manual_seed(0),
        data_parallel=data_parallel,
    )
    return cfg, net, batch, learner


def timed_iterations(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def rank_main(rank: int, world: int, port: int, args: argparse.Namespace, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    dp = DataParallel()
    cfg, net, batch, learner = setup(args.columns, args.minibatches, dp)
    mine = select_batch_columns(batch, team_shares(batch.columns, cfg.game.team_size, world)[rank])

    def iteration() -> None:
        learner.train_iteration(mine, HP, normalizer_obs=batch.obs if rank == 0 else None)
        dp.broadcast_buffers(net)

    seconds = timed_iterations(iteration, args.repeats)
    params = list(net.parameters())
    allreduce = timed_iterations(lambda: dp.sum_gradients(params), args.repeats * 4)
    if rank == 0:
        Path(out).write_text(json.dumps({"iteration_s": seconds, "allreduce_s": allreduce}))
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=2)
    parser.add_argument("--columns", type=int, default=64, help="fragment columns in the learner batch")
    parser.add_argument("--minibatches", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    cfg, net, batch, learner = setup(args.columns, args.minibatches)
    samples = batch.steps * batch.columns
    one = timed_iterations(lambda: learner.train_iteration(batch, HP), args.repeats)
    with tempfile.TemporaryDirectory() as tmp, socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        out = f"{tmp}/rank0.json"
        mp.spawn(rank_main, args=(args.learners, port, args, out), nprocs=args.learners, join=True)
        several = json.loads(Path(out).read_text())
    result = {
        "samples_per_batch": samples,
        "parameters": sum(p.numel() for p in net.parameters()),
        "one_learner_samples_per_s": samples / one,
        "learners": args.learners,
        "several_learners_samples_per_s": samples / several["iteration_s"],
        "gradient_allreduce_ms": several["allreduce_s"] * 1e3,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"1 learner: {result['one_learner_samples_per_s']:,.0f} samples/s; {args.learners} learners: "
        f"{result['several_learners_samples_per_s']:,.0f} samples/s; gradient all-reduce "
        f"{result['gradient_allreduce_ms']:.2f} ms ({result['parameters']:,} parameters)"
    )


if __name__ == "__main__":
    main()
