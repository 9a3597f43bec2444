"""Several data-parallel learners on one machine (``train.learners``), with ``torch.distributed``.

    rank 0 (the trainer)                                   ranks 1..N-1 (learner processes it starts)
    workers -> fragments -> learner batch
               -> share 0 ............ train_iteration <-all-reduce-> train_iteration ......... shares 1..N-1
    publishes parameters, writes checkpoints, metrics, rollouts and the opponent pool (the others write nothing)

Rank 0 keeps every role of the single-learner loop (workers, staleness, reward scaling, pool, checkpoints): the
other ranks only take their share of each learner batch (whole teams, split as evenly as possible), run the same
gradient steps and sum the gradients with rank 0's (``fivectl.rl.data_parallel``), so the parameters stay
identical on every rank without being sent. The observation normalizers are updated on rank 0 with the whole
batch and broadcast. Every rank starts from the same checkpoint: rank 0 restores (or writes version 0) first,
then starts the others, which load that version read-only. Collectives run over NCCL on GPUs (rank r on cuda:r)
and gloo on CPU; batches travel over gloo as one byte buffer per rank.

A learner process ends when rank 0 says so, or when rank 0 is gone (a watchdog polls its parent), so a
``kill -9`` of the trainer leaves no learner behind; a resumed run restarts them from the resumed checkpoint.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import socket
import threading
import time
from dataclasses import astuple, fields
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from fivectl.config import Recipe, recipe_from_dict
from fivectl.errors import BadInput, RunFailed
from fivectl.rl.data_parallel import DataParallel
from fivectl.rl.learner import FragmentBatch, select_batch_columns
from fivectl.rl.schedules import Hyperparameters
from fivectl.runtime.allocator import keep_freed_memory
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.rundir import RunDir

# Rendezvous and collectives give up after this long (a rank that died mid-collective surfaces as an error).
COLLECTIVE_TIMEOUT = timedelta(minutes=10)
STOP, ITERATE = 0, 1


def usable_cores() -> int:
    """The CPU cores this process may use (its affinity where the OS has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def available_learner_slots(device: torch.device) -> int:
    """How many learners this machine can run: one per GPU, or one per CPU core this process may use."""
    if device.type == "cuda":
        return torch.cuda.device_count()
    return usable_cores()


def check_learners(learners: int, device: torch.device) -> None:
    slots = available_learner_slots(device)
    if learners > slots:
        what = "CUDA devices" if device.type == "cuda" else "CPU cores"
        raise BadInput(f"--learners {learners}: this machine has {slots} {what} for learners")


# ---- batches as bytes ---------------------------------------------------------------------------------------


def _flatten(value: Any, leaves: list[torch.Tensor]) -> Any:
    """JSON description of a tree of tensors (dicts, lists, tuples, None); the tensors go to ``leaves``."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        leaves.append(value.detach().cpu().contiguous())
        return {"leaf": len(leaves) - 1, "dtype": str(value.dtype).removeprefix("torch."), "shape": list(value.shape)}
    if isinstance(value, dict):
        return {"dict": {k: _flatten(v, leaves) for k, v in value.items()}}
    if isinstance(value, list | tuple):
        return {"seq": [_flatten(v, leaves) for v in value], "tuple": isinstance(value, tuple)}
    raise BadInput(f"cannot send a {type(value).__name__} to another learner")


def _unflatten(spec: Any, buffer: torch.Tensor, offsets: list[int]) -> Any:
    if spec is None:
        return None
    if "leaf" in spec:
        dtype = getattr(torch, spec["dtype"])
        start, end = offsets[spec["leaf"]], offsets[spec["leaf"] + 1]
        return buffer[start:end].view(dtype).reshape(spec["shape"]).clone()
    if "dict" in spec:
        return {k: _unflatten(v, buffer, offsets) for k, v in spec["dict"].items()}
    items = [_unflatten(v, buffer, offsets) for v in spec["seq"]]
    return tuple(items) if spec["tuple"] else items


def batch_to_bytes(batch: FragmentBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """(JSON header as uint8, every tensor's bytes in one uint8 buffer)."""
    leaves: list[torch.Tensor] = []
    spec = {f.name: _flatten(getattr(batch, f.name), leaves) for f in fields(FragmentBatch)}
    sizes = [leaf.numel() * leaf.element_size() for leaf in leaves]
    header = json.dumps({"spec": spec, "offsets": np.concatenate([[0], np.cumsum(sizes)]).tolist()})
    data = torch.cat([leaf.reshape(-1).view(torch.uint8) for leaf in leaves]) if leaves else torch.empty(0)
    return torch.frombuffer(bytearray(header.encode()), dtype=torch.uint8), data.to(torch.uint8)


def batch_from_bytes(header: torch.Tensor, data: torch.Tensor) -> FragmentBatch:
    meta = json.loads(bytes(header.numpy()).decode())
    return FragmentBatch(**{k: _unflatten(v, data, meta["offsets"]) for k, v in meta["spec"].items()})


def _send_bytes(tensor: torch.Tensor, dst: int, group) -> None:
    dist.send(torch.tensor([tensor.numel()], dtype=torch.int64), dst=dst, group=group)
    dist.send(tensor, dst=dst, group=group)


def _recv_bytes(src: int, group) -> torch.Tensor:
    size = torch.empty(1, dtype=torch.int64)
    dist.recv(size, src=src, group=group)
    out = torch.empty(int(size), dtype=torch.uint8)
    dist.recv(out, src=src, group=group)
    return out


def team_shares(columns: int, team_size: int, world: int) -> list[torch.Tensor]:
    """Column indices of each rank's share: whole teams, contiguous, as even as possible."""
    teams = np.array_split(np.arange(columns // team_size), world)
    return [
        torch.from_numpy((t[:, None] * team_size + np.arange(team_size)).reshape(-1)).long() for t in teams
    ]


# ---- rank 0 ----------------------------------------------------------------------------------------------------


def free_loopback_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LearnerGroup:
    """Rank 0's handle on the other learners: starts them, hands out shares, stops them."""

    def __init__(self, recipe: Recipe, run_path: Path, version: int, device: torch.device):
        self.world = recipe.train.learners
        self.team_size = recipe.game.team_size
        backend = "nccl" if device.type == "cuda" else "gloo"
        address = f"tcp://127.0.0.1:{free_loopback_port()}"
        ctx = mp.get_context("spawn")
        self.procs = [
            ctx.Process(
                target=learner_main,
                kwargs=dict(
                    rank=rank,
                    world=self.world,
                    address=address,
                    backend=backend,
                    run_path=str(run_path),
                    recipe_dict=recipe.to_dict(),
                    version=version,
                    parent_pid=os.getpid(),
                ),
                daemon=True,
                name=f"fivectl-learner-{rank}",
            )
            for rank in range(1, self.world)
        ]
        for proc in self.procs:
            proc.start()
        dist.init_process_group(
            backend, init_method=address, rank=0, world_size=self.world, timeout=COLLECTIVE_TIMEOUT
        )
        # Batches travel over gloo (CPU tensors) whatever carries the gradients.
        self.data_group = dist.new_group(backend="gloo") if backend != "gloo" else None
        self.data_parallel = DataParallel()
        self.mid_iteration = False  # between share() and finish(): the ranks are inside collectives

    def share(self, batch: FragmentBatch, hp: Hyperparameters) -> FragmentBatch:
        """Send ranks 1.. their shares of ``batch`` and the hyperparameters; returns rank 0's share."""
        shares = team_shares(batch.columns, self.team_size, self.world)
        self.mid_iteration = True
        self._broadcast_command(ITERATE)
        dist.broadcast(torch.tensor(astuple(hp), dtype=torch.float64), src=0, group=self.data_group)
        for rank in range(1, self.world):
            header, data = batch_to_bytes(select_batch_columns(batch, shares[rank]))
            _send_bytes(header, rank, self.data_group)
            _send_bytes(data, rank, self.data_group)
        return select_batch_columns(batch, shares[0])

    def finish(self, model: torch.nn.Module) -> None:
        """After rank 0's ``train_iteration``: every rank takes rank 0's observation normalizers."""
        self.data_parallel.broadcast_buffers(model)
        self.mid_iteration = False

    def _broadcast_command(self, command: int) -> None:
        dist.broadcast(torch.tensor([command], dtype=torch.int64), src=0, group=self.data_group)

    def close(self) -> None:
        try:
            # Stopped mid-iteration (a second Ctrl-C, an error), the others wait in a collective that will not
            # come: they are killed below instead of told.
            if not self.mid_iteration and all(p.is_alive() for p in self.procs):
                self._broadcast_command(STOP)
        except RuntimeError:
            pass  # a rank already gone: nothing to tell it
        finally:
            for proc in self.procs:
                proc.join(timeout=0 if self.mid_iteration else 30)
                if proc.is_alive():
                    proc.kill()
                    proc.join()
            if dist.is_initialized():
                dist.destroy_process_group()

    def failed(self, error: Exception) -> RunFailed:
        dead = [p.name for p in self.procs if not p.is_alive()]
        who = f"learner process {', '.join(dead)} died" if dead else "a learner collective failed"
        # gloo prefixes its messages with a source location in brackets: keep the sentence
        text = str(error).splitlines()[0] if str(error) else type(error).__name__
        return RunFailed(f"{who}: {text.split('] ', 1)[-1].split('. ')[0]}")


# ---- ranks 1.. ---------------------------------------------------------------------------------------------------


def _exit_when_parent_dies(parent_pid: int) -> None:
    """A learner never outlives its trainer (kill -9 included: no one would tell it to stop)."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="parent-watchdog").start()


def learner_main(
    *,
    rank: int,
    world: int,
    address: str,
    backend: str,
    run_path: str,
    recipe_dict: dict,
    version: int,
    parent_pid: int,
) -> None:
    from fivectl.runtime.run_state import apply_checkpoint, build_learner_state

    _exit_when_parent_dies(parent_pid)
    torch.set_num_threads(1)
    keep_freed_memory()
    dist.init_process_group(
        backend, init_method=address, rank=rank, world_size=world, timeout=COLLECTIVE_TIMEOUT
    )
    data_group = dist.new_group(backend="gloo") if backend != "gloo" else None
    try:
        recipe = recipe_from_dict(recipe_dict, source=f"{run_path} (learner {rank})")
        run = RunDir.open(Path(run_path))
        schema = run.obs_schema(recipe.model.schema_version)  # a surgery may have recorded its own schema
        device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
        if device.type == "cuda":
            torch.cuda.set_device(device)
        data_parallel = DataParallel()
        state = build_learner_state(recipe, schema, device, 1, data_parallel)
        apply_checkpoint(state, CheckpointStore(run.checkpoints_path).load(version))
        command = torch.empty(1, dtype=torch.int64)
        hp_values = torch.empty(len(fields(Hyperparameters)), dtype=torch.float64)
        while True:
            dist.broadcast(command, src=0, group=data_group)
            if int(command) == STOP:
                break
            dist.broadcast(hp_values, src=0, group=data_group)
            hp = Hyperparameters(*hp_values.tolist())
            header = _recv_bytes(0, data_group)
            batch = batch_from_bytes(header, _recv_bytes(0, data_group))
            state.learner.train_iteration(batch, hp, normalizer_obs=None)
            data_parallel.broadcast_buffers(state.model)
    finally:
        dist.destroy_process_group()
