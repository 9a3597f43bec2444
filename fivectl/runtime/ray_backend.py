"""Rollout workers as Ray actors (``train.backend = "ray"``): the fragment source for a Ray cluster.

The same ``RolloutWorker`` as a local worker process runs inside each actor, on any node of the cluster. Only
the transport behind ``fragment_source.FragmentSource`` differs from ``ProcessSource`` (fragment_queue.py):

    learner --ray.put(parameter snapshot)--> object store --set_params--> actors (pick it up between fragments)
    actors --fill() returns the fragment's bytes--> object store --ray.wait/ray.get--> learner (same slot views)

A published version is one byte array (the parameter store's whole block: parameters, version, schedules,
opponent pool), put once into the object store and announced to every actor on a concurrency group of its own,
so the announcement never waits behind a fragment being filled. A fragment comes back as one byte array too
(the slot layout of buffers.py), so the learner reads it through the same views as a shared-memory slot. Each
actor has ``slots_per_worker`` fills in flight, like the slots of a local worker. A dead actor (or node) shows
up as a failed fill and is replaced; a hung one (no fragment within the heartbeat timeout) is killed and
replaced.

Ray is an optional dependency (``pip install 'fivectl[ray]'``): it is imported only when this backend runs.
"""

from __future__ import annotations

import os
import socket
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fivectl.config import Recipe
from fivectl.errors import BadInput
from fivectl.runtime.buffers import ArraySpec, FragmentSlots, recipe_fragment_specs, slot_views
from fivectl.runtime.fragment_source import FragmentSourceOptions, SourceStats, WorkerEvent
from fivectl.runtime.params import ParameterStore
from fivectl.runtime.worker import start_rollout_worker, worker_seed
from fivectl.schema import ObsSchema

RAY_EXTRA = "pip install 'fivectl[ray]'"
CONTROL_GROUP = "control"  # the actors' concurrency group for parameter announcements
PROBE_TIMEOUT_S = 3.0


def import_ray():
    try:
        import ray
    except ImportError as e:
        raise BadInput(f"--backend ray: the ray package is not installed ({RAY_EXTRA})") from e
    return ray


def probe_address(address: str) -> None:
    """Fail fast on an address nothing answers at (ray.init would retry for a minute before giving up)."""
    if address in ("", "auto", "local"):
        return
    host_port = address.removeprefix("ray://")
    host, _, port = host_port.rpartition(":")
    if not host or not port.isdigit():
        raise BadInput(f"--ray-address {address}: expected host:port (or ray://host:port, auto)")
    try:
        with socket.create_connection((host, int(port)), timeout=PROBE_TIMEOUT_S):
            pass
    except OSError as e:
        raise BadInput(f"--ray-address {address}: no Ray cluster answers there ({e.strerror or e})") from e


def connect(address: str) -> None:
    """Join the Ray cluster at ``address`` (or start one on this machine when empty); a driver that is already
    connected (a test, a notebook) keeps its connection."""
    ray = import_ray()
    probe_address(address)
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": "WARNING", "configure_logging": True}
    try:
        ray.init(address=address or None, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise BadInput(f"--ray-address {address or '(local)'}: cannot join the Ray cluster ({e})") from e


def check_ray_backend(recipe: Recipe) -> None:
    """Bad input, before anything is written: ray missing, an unreachable cluster, serial mode."""
    t = recipe.train
    if t.backend != "ray":
        return
    import_ray()
    if t.workers < 1:
        raise BadInput("--backend ray: needs --workers 1 or more (serial mode runs no workers)")
    connect(t.ray_address)


class RolloutActor:
    """The body of one Ray actor: a rollout worker over a local copy of the parameter store."""

    def __init__(
        self,
        *,
        worker_id: int,
        recipe_dict: dict,
        schema_json: str,
        param_specs: list,
        slot_specs: list,
        seed: int,
        run_dir: str | None,
    ):
        import torch

        from fivectl.config import recipe_from_dict

        torch.set_num_threads(1)
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        recipe = recipe_from_dict(recipe_dict)
        schema = ObsSchema.from_json(schema_json)
        self.params = ParameterStore([ArraySpec(*s) for s in param_specs], shared=False)
        self.slots = FragmentSlots([ArraySpec(*s) for s in slot_specs], 1, shared=False)
        self.announced: tuple[int, list] | None = None  # (version, [object ref of its snapshot])
        self.loaded = -1
        self.run_dir = Path(run_dir) if run_dir else None
        self.worker = start_rollout_worker(
            recipe, schema, self.params, seed, run_dir=self.run_dir, worker_id=worker_id
        )

    def set_params(self, version: int, ref: list) -> None:
        """A new version was published (runs on the control group, beside a fill in progress)."""
        self.announced = (version, ref)

    def fill(self) -> tuple[np.ndarray, list[float]]:
        """One fragment with the latest announced parameters: its bytes and [sim s, inference s]."""
        import ray

        announced = self.announced
        if announced is not None and announced[0] != self.loaded:
            self.params.load_snapshot(ray.get(announced[1][0]))
            self.loaded = announced[0]
        stats = self.worker.fill(self.slots.slots[0])
        return self.slots.raw(0), [stats.seconds_sim, stats.seconds_infer]

    def close(self) -> None:
        self.worker.close()


@dataclass
class ActorSlot:
    """The learner's record of one worker: its actor, generation and the fills it has in flight."""

    actor: Any
    generation: int
    started_at: float
    ready: bool = False  # it has delivered a fragment (before: the startup grace period applies)
    failure: str = ""  # why it is to be replaced ("" while healthy)
    last_progress: float = 0.0
    version: int = -1  # policy version of its latest fragment


@dataclass
class Delivered:
    worker_id: int
    generation: int
    raw: np.ndarray
    sim_s: float
    infer_s: float


class RaySource:
    """Rollout workers as Ray actors; gives the learner what ``ProcessSource`` gives it (get/release/health)."""

    def __init__(self, options: FragmentSourceOptions):
        self.ray = import_ray()
        connect(options.recipe.train.ray_address)
        self.recipe = options.recipe
        self.schema = options.schema
        self.params = options.params
        self.seed = options.seed
        self.n_workers = options.workers
        self.slots_per_worker = options.slots_per_worker
        self.heartbeat_timeout_s = options.heartbeat_timeout_s
        self.startup_timeout_s = options.startup_timeout_s
        self.run_dir = str(options.run_dir) if options.run_dir is not None else None
        self.namespace = run_namespace(options.run_dir, os.getpid())
        self.specs = recipe_fragment_specs(self.recipe, self.schema)
        self.actor_class = self.ray.remote(num_cpus=1, concurrency_groups={CONTROL_GROUP: 1})(RolloutActor)
        self.pushed_version = -1
        self.params_ref: list = []
        self.pending: dict[Any, tuple[int, int]] = {}  # fill ref -> (worker, generation)
        self.delivered: deque[Delivered] = deque()
        self.held: dict[int, Delivered] = {}
        self.next_slot = 0
        self.sim_s = self.infer_s = 0.0
        self.workers: list[ActorSlot] = []
        self.push_params()
        for w in range(self.n_workers):
            self.workers.append(self._start(w, generation=0))

    # ---- actors ------------------------------------------------------------------------------------------------

    def _start(self, w: int, generation: int) -> ActorSlot:
        seed = worker_seed(self.seed, w, generation, max(self.params.version, 0))
        # Named per session and generation, so that an operator (or a test) can find a worker: ray.get_actor(
        # actor_name(w, generation), namespace=run_namespace(run_dir, trainer_pid)).
        actor = self.actor_class.options(
            name=actor_name(w, generation), namespace=self.namespace, max_restarts=0
        ).remote(
            worker_id=w,
            recipe_dict=self.recipe.to_dict(),
            schema_json=self.schema.to_json(),
            param_specs=[(s.key, s.shape, s.dtype) for s in self.params.specs],
            slot_specs=[(s.key, s.shape, s.dtype) for s in self.specs],
            seed=seed,
            run_dir=self.run_dir,
        )
        self._announce(actor)
        now = time.time()
        slot = ActorSlot(actor, generation, now, last_progress=now)
        for _ in range(self.slots_per_worker):
            self.pending[actor.fill.remote()] = (w, generation)
        return slot

    def _announce(self, actor) -> None:
        actor.set_params.options(concurrency_group=CONTROL_GROUP).remote(self.pushed_version, self.params_ref)

    def push_params(self) -> None:
        """Put a newly published version into the object store and announce it to every actor."""
        version = self.params.version
        if version == self.pushed_version:
            return
        self.params_ref = [self.ray.put(self.params.snapshot())]
        self.pushed_version = version
        for slot in self.workers:
            if not slot.failure:
                self._announce(slot.actor)

    def _collect(self, timeout: float) -> None:
        """Move finished fills into ``delivered``; a failed one marks its actor for replacement."""
        if not self.pending:
            time.sleep(min(timeout, 0.05))
            return
        ready, _ = self.ray.wait(list(self.pending), num_returns=len(self.pending), timeout=max(timeout, 0.0))
        if not ready:
            return
        for ref in ready:
            w, generation = self.pending.pop(ref)
            slot = self.workers[w]
            try:
                raw, (sim_s, infer_s) = self.ray.get(ref)
            except self.ray.exceptions.RayError as e:
                if slot.generation == generation and not slot.failure:
                    slot.failure = f"died: {first_line(e)}"
                continue
            if slot.generation != generation:
                continue  # a replaced actor's last fragment: its games belong to a worker that is gone
            slot.ready = True
            slot.last_progress = time.time()
            delivered = Delivered(w, generation, raw, sim_s, infer_s)
            slot.version = int(slot_views(self.specs, raw)["header"][0])
            self.sim_s += sim_s
            self.infer_s += infer_s
            self.delivered.append(delivered)

    # ---- the fragment source -----------------------------------------------------------------------------------

    def get(self, timeout: float = 1.0) -> tuple[int, dict[str, np.ndarray]] | None:
        self.push_params()
        if not self.delivered:
            self._wait_one(timeout)
        if not self.delivered:
            return None
        delivered = self.delivered.popleft()
        slot = self.next_slot
        self.next_slot += 1
        self.held[slot] = delivered
        return slot, slot_views(self.specs, delivered.raw)

    def _wait_one(self, timeout: float) -> None:
        """Wait for the first finished fill, then sweep whatever else has finished, without waiting."""
        if not self.pending:
            time.sleep(min(timeout, 0.05))
            return
        ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=timeout)
        if ready:
            self._collect(0.0)

    def release(self, slot: int) -> None:
        """The learner has copied the fragment: its worker may fill another (as a local worker's slot returns)."""
        delivered = self.held.pop(slot, None)
        if delivered is None:
            return
        worker = self.workers[delivered.worker_id]
        if worker.generation == delivered.generation and not worker.failure:
            if not self._has_pending(delivered.worker_id):
                worker.last_progress = time.time()  # it was idle, waiting for the learner: the clock starts now
            self.pending[worker.actor.fill.remote()] = (delivered.worker_id, delivered.generation)

    def _has_pending(self, w: int) -> bool:
        return any(owner[0] == w for owner in self.pending.values())

    def check_health(self) -> list[WorkerEvent]:
        """Replace dead actors, and kill and replace hung ones (no fragment within the heartbeat timeout)."""
        self._collect(0.0)
        events = []
        now = time.time()
        for w, slot in enumerate(self.workers):
            limit = self.heartbeat_timeout_s if slot.ready else self.startup_timeout_s
            if slot.failure:
                events.append(WorkerEvent(w, "died", slot.failure))
            elif now - slot.last_progress > limit and self._has_pending(w):  # idle while the learner holds all
                events.append(WorkerEvent(w, "hung", f"no fragment for {now - slot.last_progress:.0f}s"))
            else:
                continue
            self.ray.kill(slot.actor, no_restart=True)
            self.pending = {ref: owner for ref, owner in self.pending.items() if owner[0] != w}
            self.workers[w] = self._start(w, slot.generation + 1)
            events.append(WorkerEvent(w, "restarted", f"generation {slot.generation + 1}"))
        return events

    def oldest_version_in_flight(self) -> int | None:
        self._collect(0.0)
        versions = [slot.version for slot in self.workers if not slot.failure and slot.ready]
        return min(versions) if versions else None

    def stats(self) -> SourceStats:
        alive = sum(not slot.failure for slot in self.workers)
        return SourceStats(
            alive,
            len(self.pending) + len(self.delivered) + len(self.held),
            self.sim_s,
            self.infer_s,
            0.0,
            [slot.version for slot in self.workers],
        )

    def close(self) -> None:
        # Killed, like a local worker killed mid-fragment: a fill in progress is lost (the learner has what it
        # needs), and a replay it was recording stays a partial file, which readers skip.
        for slot in self.workers:
            self.ray.kill(slot.actor, no_restart=True)
        self.pending.clear()
        self.delivered.clear()
        self.held.clear()
        self.params_ref = []


def run_namespace(run_dir: Path | str | None, trainer_pid: int) -> str:
    """The Ray namespace of one training session's worker actors: two runs on a cluster, or a resumed session
    and the actors of the killed one that Ray has not yet cleaned up, never share actor names."""
    return f"fivectl:{Path(run_dir).resolve() if run_dir is not None else ''}:{trainer_pid}"


def actor_name(worker_id: int, generation: int) -> str:
    return f"rollout-worker-{worker_id}-g{generation}"


def first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:200] if text else type(error).__name__
