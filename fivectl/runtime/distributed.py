"""Several data-parallel learners (``train.learners``), with ``torch.distributed``, on one machine or several.

    rank 0 (the trainer)                                   ranks 1..N-1 (learner processes)
    workers -> fragments -> learner batch
               -> share 0 ............ train_iteration <-all-reduce-> train_iteration ......... shares 1..N-1
    publishes parameters, writes checkpoints, metrics, rollouts and the opponent pool (the others write nothing)

Rank 0 keeps every role of the single-learner loop (workers, staleness, reward scaling, pool, checkpoints): the
other ranks only take their share of each learner batch (whole teams, split as evenly as possible), run the same
gradient steps and sum the gradients with rank 0's (``fivectl.rl.data_parallel``), so the parameters stay
identical on every rank without being sent. The observation normalizers are updated on rank 0 with the whole
batch and broadcast.

Two ways to start the ranks:

- ``--learners N``: rank 0 starts ranks 1..N-1 on its own machine (rendezvous on the loopback address);
- under ``torchrun`` (the environment has RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT): torchrun
  starts every rank, on one machine or several; ``fivectl train`` with RANK 0 is the trainer, every other rank
  runs :func:`learner_main` and ignores the rest of its command line. WORLD_SIZE is the learner count.

Every rank starts from the same checkpoint: rank 0 restores (or writes version 0) first, then sends the recipe,
the observation schema and that checkpoint to the others over the process group. So a rank never reads the run
directory, and ranks on other machines need no shared filesystem (only the fivectl installation).

The default process group is gloo whatever the device: commands, the start message and the batches travel over
it as CPU byte buffers (one per rank). With device cuda the gradients and normalizers go over a second group on
NCCL (rank r on ``cuda:LOCAL_RANK``, or ``cuda:r`` for ranks rank 0 starts itself).

A learner process ends when rank 0 says so, or when rank 0 is gone: rank 0's end closes its gloo connections,
which fails the broadcast the others wait in; the processes rank 0 started also poll their parent (a watchdog),
so a ``kill -9`` of the trainer leaves no learner behind. A machine that vanishes without closing connections
is noticed after ``COLLECTIVE_TIMEOUT``. A resumed run restarts the learners from the resumed checkpoint.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import astuple, dataclass, fields
from datetime import timedelta
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
from fivectl.schema import ObsSchema
from fivectl.store.checkpoint import Checkpoint

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


def check_learners(learners: int, device: torch.device, launch: LaunchEnv | None = None) -> None:
    """Whether this machine can hold its learners: all of them, or under torchrun this rank's GPU."""
    if launch is not None:
        # torchrun decides how many ranks each machine runs; a CPU rank shares the cores like any process
        if device.type == "cuda" and launch.local_rank >= torch.cuda.device_count():
            raise BadInput(
                f"LOCAL_RANK {launch.local_rank}: this machine has {torch.cuda.device_count()} CUDA devices "
                "(torchrun --nproc-per-node at most that)"
            )
        return
    slots = available_learner_slots(device)
    if learners > slots:
        what = "CUDA devices" if device.type == "cuda" else "CPU cores"
        raise BadInput(f"--learners {learners}: this machine has {slots} {what} for learners")


# ---- torchrun's environment ----------------------------------------------------------------------------------

TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


@dataclass(frozen=True)
class LaunchEnv:
    """The learner ranks torchrun (or anything that sets its variables) started: this process is ``rank`` of
    ``world``, ``local_rank`` on its machine; MASTER_ADDR and MASTER_PORT stay in the environment for env://."""

    rank: int
    world: int
    local_rank: int


def launch_env(environ: Mapping[str, str] | None = None) -> LaunchEnv | None:
    """torchrun's variables, checked; None when RANK and WORLD_SIZE are both absent (a plain ``fivectl train``)."""
    env = os.environ if environ is None else environ
    if "RANK" not in env and "WORLD_SIZE" not in env:
        return None
    missing = [name for name in TORCHRUN_VARS if not env.get(name)]
    if missing:
        raise BadInput(
            f"torchrun environment: {', '.join(missing)} not set ({', '.join(TORCHRUN_VARS)} go together; "
            "start the learners with torchrun)"
        )
    numbers = {}
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT"):
        try:
            numbers[name] = int(env[name])
        except ValueError:
            raise BadInput(f"torchrun environment: {name}={env[name]!r} is not an integer") from None
    rank, world, local_rank, port = (numbers[n] for n in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT"))
    if world < 1 or not 0 <= rank < world:
        raise BadInput(
            f"torchrun environment: RANK {rank} of WORLD_SIZE {world} (need 0 <= RANK < WORLD_SIZE)"
        )
    if local_rank < 0 or local_rank > rank:
        raise BadInput(f"torchrun environment: LOCAL_RANK {local_rank} with RANK {rank}")
    if not 0 < port < 65536:
        raise BadInput(f"torchrun environment: MASTER_PORT {port} is not a port")
    return LaunchEnv(rank=rank, world=world, local_rank=local_rank)


# ---- batches as bytes ---------------------------------------------------------------------------------------


def _flatten(value: Any, leaves: list[torch.Tensor]) -> Any:
    """JSON description of a tree of tensors (dicts, lists, tuples, None); the tensors go to ``leaves``."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        leaves.append(value.detach().cpu().contiguous())
        return {
            "leaf": len(leaves) - 1,
            "dtype": str(value.dtype).removeprefix("torch."),
            "shape": list(value.shape),
        }
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
        # the copy first: a leaf's bytes need not start at a multiple of its element size in the buffer
        return buffer[start:end].clone().view(dtype).reshape(spec["shape"])
    if "dict" in spec:
        return {k: _unflatten(v, buffer, offsets) for k, v in spec["dict"].items()}
    items = [_unflatten(v, buffer, offsets) for v in spec["seq"]]
    return tuple(items) if spec["tuple"] else items


def tree_to_bytes(tree: Any, info: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(JSON header as uint8, every tensor's bytes in one uint8 buffer) for a tree of tensors; ``info``: more
    JSON carried in the header."""
    leaves: list[torch.Tensor] = []
    spec = _flatten(tree, leaves)
    sizes = [leaf.numel() * leaf.element_size() for leaf in leaves]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64).tolist()
    header = json.dumps({"spec": spec, "offsets": offsets, "info": info})
    data = torch.cat([leaf.reshape(-1).view(torch.uint8) for leaf in leaves]) if leaves else torch.empty(0)
    return torch.frombuffer(bytearray(header.encode()), dtype=torch.uint8), data.to(torch.uint8)


def tree_from_bytes(header: torch.Tensor, data: torch.Tensor) -> tuple[Any, Any]:
    """(the tree, the header's ``info``) of :func:`tree_to_bytes`."""
    meta = json.loads(bytes(header.numpy()).decode())
    return _unflatten(meta["spec"], data, meta["offsets"]), meta["info"]


def batch_to_bytes(batch: FragmentBatch) -> tuple[torch.Tensor, torch.Tensor]:
    return tree_to_bytes({f.name: getattr(batch, f.name) for f in fields(FragmentBatch)})


def batch_from_bytes(header: torch.Tensor, data: torch.Tensor) -> FragmentBatch:
    return FragmentBatch(**tree_from_bytes(header, data)[0])


def _broadcast_bytes(tensor: torch.Tensor | None) -> torch.Tensor:
    """Rank 0's byte buffer on every rank (``tensor``: rank 0's, None elsewhere), over the default gloo group."""
    size = torch.tensor([0 if tensor is None else tensor.numel()], dtype=torch.int64)
    dist.broadcast(size, src=0)
    out = tensor if tensor is not None else torch.empty(int(size), dtype=torch.uint8)
    dist.broadcast(out, src=0)
    return out


# ---- the start message: what a rank needs to build its learner --------------------------------------------------


@dataclass
class Start:
    """Rank 0's recipe, observation schema (a surgery may have recorded its own), device type and the checkpoint
    every rank starts from."""

    recipe: Recipe
    schema: ObsSchema
    device_type: str
    checkpoint: Checkpoint


def send_start(start: Start) -> None:
    arrays = {
        section: {name: torch.from_numpy(np.array(value)) for name, value in named.items()}
        for section, named in start.checkpoint.arrays.items()
    }
    info = {
        "recipe": start.recipe.to_dict(),
        "schema": start.schema.to_json(),
        "device_type": start.device_type,
        "version": start.checkpoint.version,
        "attrs": start.checkpoint.attrs,
    }
    header, data = tree_to_bytes(arrays, info)
    _broadcast_bytes(header)
    _broadcast_bytes(data)


def receive_start(rank: int) -> Start:
    header = _broadcast_bytes(None)
    arrays, info = tree_from_bytes(header, _broadcast_bytes(None))
    checkpoint = Checkpoint(
        version=info["version"],
        arrays={section: {k: v.numpy() for k, v in named.items()} for section, named in arrays.items()},
        attrs=info["attrs"],
    )
    return Start(
        recipe=recipe_from_dict(info["recipe"], source=f"rank 0's recipe (learner rank {rank})"),
        schema=ObsSchema.from_json(info["schema"]),
        device_type=info["device_type"],
        checkpoint=checkpoint,
    )


def agree_on_devices(problem: str) -> None:
    """Every rank says whether it can take the device rank 0 trains on ('' = yes); all raise if one cannot, so no
    rank waits for a group the others never join."""
    flags = [torch.zeros(1, dtype=torch.int64) for _ in range(dist.get_world_size())]
    dist.all_gather(flags, torch.tensor([1 if problem else 0], dtype=torch.int64))
    failed = [rank for rank, flag in enumerate(flags) if int(flag)]
    if failed:
        raise RunFailed(problem or f"learner rank(s) {', '.join(map(str, failed))} have no such CUDA device")


def gradient_group(device_type: str) -> dist.ProcessGroup | None:
    """The group gradients and normalizers are summed over: NCCL on GPUs, else the default gloo group (None)."""
    return dist.new_group(backend="nccl") if device_type == "cuda" else None


def cuda_problem(index: int) -> str:
    """Why this process cannot train on ``cuda:index`` ('' when it can)."""
    if not torch.cuda.is_available():
        return f"learner rank {dist.get_rank()}: no CUDA device on its machine"
    if index >= torch.cuda.device_count():
        return (
            f"learner rank {dist.get_rank()}: cuda:{index} does not exist on its machine "
            f"({torch.cuda.device_count()} CUDA devices)"
        )
    return ""


def _send_bytes(tensor: torch.Tensor, dst: int) -> None:
    dist.send(torch.tensor([tensor.numel()], dtype=torch.int64), dst=dst)
    dist.send(tensor, dst=dst)


def _recv_bytes(src: int) -> torch.Tensor:
    size = torch.empty(1, dtype=torch.int64)
    dist.recv(size, src=src)
    out = torch.empty(int(size), dtype=torch.uint8)
    dist.recv(out, src=src)
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
    """Rank 0's handle on the other learners: starts them (or, under torchrun, meets them), hands out shares,
    stops them."""

    def __init__(
        self,
        recipe: Recipe,
        schema: ObsSchema,
        checkpoint: Checkpoint,
        device: torch.device,
        launch: LaunchEnv | None = None,
    ):
        self.world = recipe.train.learners
        self.team_size = recipe.game.team_size
        self.procs: list[mp.process.BaseProcess] = []
        if launch is None:
            address = f"tcp://127.0.0.1:{free_loopback_port()}"
            ctx = mp.get_context("spawn")
            self.procs = [
                ctx.Process(
                    target=learner_main,
                    kwargs=dict(
                        rank=rank,
                        world=self.world,
                        init_method=address,
                        cuda_index=rank,
                        parent_pid=os.getpid(),
                    ),
                    daemon=True,
                    name=f"fivectl-learner-{rank}",
                )
                for rank in range(1, self.world)
            ]
            for proc in self.procs:
                proc.start()
        else:
            address = "env://"  # MASTER_ADDR:MASTER_PORT, or torchrun's own store
        # between share() and finish() the ranks are inside collectives, and until they have all built their
        # learners: a failure then kills the processes started here instead of telling them to stop
        self.mid_iteration = True
        try:
            dist.init_process_group(
                "gloo", init_method=address, rank=0, world_size=self.world, timeout=COLLECTIVE_TIMEOUT
            )
            send_start(Start(recipe, schema, device.type, checkpoint))
            agree_on_devices("")
            self.data_parallel = DataParallel(gradient_group(device.type))
        except (RuntimeError, ValueError, RunFailed) as e:  # a rank that cannot start, a failed rendezvous
            self.close()
            raise self.failed(e) from e
        self.mid_iteration = False

    def share(self, batch: FragmentBatch, hp: Hyperparameters) -> FragmentBatch:
        """Send ranks 1.. their shares of ``batch`` and the hyperparameters; returns rank 0's share."""
        shares = team_shares(batch.columns, self.team_size, self.world)
        self.mid_iteration = True
        self._broadcast_command(ITERATE)
        dist.broadcast(torch.tensor(astuple(hp), dtype=torch.float64), src=0)
        for rank in range(1, self.world):
            header, data = batch_to_bytes(select_batch_columns(batch, shares[rank]))
            _send_bytes(header, rank)
            _send_bytes(data, rank)
        return select_batch_columns(batch, shares[0])

    def finish(self, model: torch.nn.Module) -> None:
        """After rank 0's ``train_iteration``: every rank takes rank 0's observation normalizers."""
        self.data_parallel.broadcast_buffers(model)
        self.mid_iteration = False

    def _broadcast_command(self, command: int) -> None:
        dist.broadcast(torch.tensor([command], dtype=torch.int64), src=0)

    def close(self) -> None:
        try:
            # Stopped mid-iteration (a second Ctrl-C, an error), the others wait in a collective that will not
            # come: they are killed below instead of told (under torchrun they see the group close and exit).
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
        if isinstance(error, RunFailed):
            return error
        dead = [p.name for p in self.procs if not p.is_alive()]
        who = f"learner process {', '.join(dead)} died" if dead else "a learner collective failed"
        return RunFailed(f"{who}: {first_sentence(error)}")


# ---- ranks 1.. ---------------------------------------------------------------------------------------------------


def _exit_when_parent_dies(parent_pid: int) -> None:
    """A learner never outlives its trainer (kill -9 included: no one would tell it to stop)."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="parent-watchdog").start()


def learner_main(*, rank: int, world: int, init_method: str, cuda_index: int, parent_pid: int | None) -> None:
    """A learner rank > 0: join the group, build the learner from rank 0's start message, then train on the
    shares rank 0 sends until it says stop. ``cuda_index``: the GPU it takes when rank 0 trains on CUDA;
    ``parent_pid``: the trainer that started this process (None under torchrun)."""
    from fivectl.runtime.run_state import apply_checkpoint, build_learner_state

    if parent_pid is not None:
        _exit_when_parent_dies(parent_pid)
    torch.set_num_threads(1)
    keep_freed_memory()
    dist.init_process_group(
        "gloo", init_method=init_method, rank=rank, world_size=world, timeout=COLLECTIVE_TIMEOUT
    )
    try:
        start = receive_start(rank)
        on_cuda = start.device_type == "cuda"
        agree_on_devices(cuda_problem(cuda_index) if on_cuda else "")
        device = torch.device("cuda", cuda_index) if on_cuda else torch.device("cpu")
        if on_cuda:
            torch.cuda.set_device(device)
        data_parallel = DataParallel(gradient_group(start.device_type))
        state = build_learner_state(start.recipe, start.schema, device, 1, data_parallel)
        apply_checkpoint(state, start.checkpoint)
        command = torch.empty(1, dtype=torch.int64)
        hp_values = torch.empty(len(fields(Hyperparameters)), dtype=torch.float64)
        while True:
            dist.broadcast(command, src=0)
            if int(command) == STOP:
                break
            dist.broadcast(hp_values, src=0)
            hp = Hyperparameters(*hp_values.tolist())
            header = _recv_bytes(0)
            batch = batch_from_bytes(header, _recv_bytes(0))
            state.learner.train_iteration(batch, hp, normalizer_obs=None)
            data_parallel.broadcast_buffers(state.model)
    finally:
        dist.destroy_process_group()


def follow_rank_zero(launch: LaunchEnv) -> None:
    """``fivectl train`` under torchrun with RANK > 0: this process is a learner rank until rank 0 stops; rank 0
    ending or dying mid-way is a run failure here (exit 1) with one line."""
    try:
        learner_main(
            rank=launch.rank,
            world=launch.world,
            init_method="env://",
            cuda_index=launch.local_rank,
            parent_pid=None,
        )
    except RunFailed:
        raise
    except (RuntimeError, ValueError) as e:  # torch.distributed reports a lost peer or a failed rendezvous so
        raise RunFailed(f"learner rank {launch.rank}: rank 0 is gone or unreachable ({first_sentence(e)})") from e


def first_sentence(error: Exception) -> str:
    """The gist of a torch.distributed error: gloo prefixes its messages with a source location in brackets and
    follows them with advice."""
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text.split("] ", 1)[-1].split(". ")[0]
