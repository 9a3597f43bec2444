"""Data-parallel learners: one iteration of 2 gloo ranks, each on half the batch, is one learner's on all of it."""

from __future__ import annotations

import socket

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from fivectl.config.train import TrainConfig
from fivectl.rl.data_parallel import DataParallel
from fivectl.rl.learner import PPOLearner, select_batch_columns
from tests.rl.test_learner import WINDOW, TinyPolicy, hyper, rollout

COLUMNS = 8
TRAIN = TrainConfig(bptt=WINDOW, epochs=2, minibatches=1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def union_batch():
    return rollout(TinyPolicy(seed=5), columns=COLUMNS, seed=5)


def rank_main(rank: int, world: int, port: int, out_dir: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        model = TinyPolicy(seed=6)
        batch = union_batch()
        # unequal shares (6 and 2 columns): the losses must be weighted by each rank's share of the samples and
        # the advantages normalized over the union, a plain average of the ranks' gradients would not match
        mine = select_batch_columns(batch, torch.arange(0, 6) if rank == 0 else torch.arange(6, COLUMNS))
        dp = DataParallel()
        learner = PPOLearner(model, TRAIN, generator=torch.Generator().manual_seed(0), data_parallel=dp)
        # rank 0 updates the normalizers with the whole batch and gives them to the others
        learner.train_iteration(mine, hyper(), normalizer_obs=batch.obs if rank == 0 else None)
        dp.broadcast_buffers(model)
        state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
        np.savez(f"{out_dir}/rank{rank}.npz", **state)
        # both ranks done before either tears gloo down: a rank that destroys the group while the other still
        # talks to it aborts the other ("terminate called without an active exception")
        dist.barrier()
    finally:
        dist.destroy_process_group()


def test_two_ranks_on_halves_step_like_one_learner_on_the_union(tmp_path):
    mp.spawn(rank_main, args=(2, free_port(), str(tmp_path)), nprocs=2, join=True)
    model = TinyPolicy(seed=6)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    PPOLearner(model, TRAIN, generator=torch.Generator().manual_seed(0)).train_iteration(union_batch(), hyper())
    ranks = [np.load(tmp_path / f"rank{r}.npz") for r in range(2)]
    for name, value in model.state_dict().items():
        for saved in ranks:
            torch.testing.assert_close(torch.from_numpy(saved[name]), value, rtol=1e-4, atol=1e-6)
    # and the iteration did move the parameters (the comparison is not between two untouched models)
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items() if "norm" not in k)
