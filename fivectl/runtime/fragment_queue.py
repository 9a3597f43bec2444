"""The fragment queue between the rollout workers and the learner, and the supervision of the worker processes.

Fragments come from worker processes (``ProcessSource``, which also starts them, watches their heartbeats and
restarts a dead or hung one) or from one in-process worker (``SerialSource``, serial mode). Both implement
``fragment_source.FragmentSource``: ``get()`` a filled slot, copy it, ``release()`` it. The transport (shared
memory and per-worker pipes here) stays behind that interface, so another one (Ray across nodes,
ray_backend.py) is swapped in without touching the RL code.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait

import numpy as np

from fivectl.runtime.buffers import FragmentSlots, recipe_fragment_specs
from fivectl.runtime.fragment_source import FragmentSourceOptions, SourceStats, WorkerEvent
from fivectl.runtime.inference import InferenceProcess
from fivectl.runtime.worker import (
    CTRL_HEARTBEAT,
    CTRL_INFER_S,
    CTRL_READY,
    CTRL_SIM_S,
    CTRL_VERSION,
    CTRL_WAIT_S,
    SLOT_FREE,
    RolloutWorker,
    SharedBlock,
    control_specs,
    decode_slot,
    encode_slot,
    worker_main,
    worker_seed,
)


def _specs_as_lists(specs) -> list:
    return [(s.key, s.shape, s.dtype) for s in specs]


class SerialSource:
    """Serial mode (``--workers 0``): the same worker code, run in the learner's process when asked."""

    def __init__(self, options: FragmentSourceOptions):
        recipe, schema, params = options.recipe, options.schema, options.params
        self.slots = FragmentSlots(recipe_fragment_specs(recipe, schema), 1, shared=False)
        seed = worker_seed(options.seed, 0, 0, params.version)
        self.worker = RolloutWorker(recipe, schema, params, seed, run_dir=options.run_dir)
        self.sim_s = self.infer_s = 0.0

    def get(self, timeout: float = 0.0) -> tuple[int, dict[str, np.ndarray]]:
        stats = self.worker.fill(self.slots.slots[0])
        self.sim_s += stats.seconds_sim
        self.infer_s += stats.seconds_infer
        return 0, self.slots.slots[0]

    def release(self, slot: int) -> None:
        return None

    def check_health(self) -> list[WorkerEvent]:
        return []

    def stats(self) -> SourceStats:
        return SourceStats(1, 0, self.sim_s, self.infer_s, 0.0, [self.worker.version])

    def oldest_version_in_flight(self) -> int | None:
        return None

    def close(self) -> None:
        self.worker.close()
        self.slots.close()


@dataclass
class WorkerPipes:
    """The learner's ends of one worker's two pipes: free slot numbers go out, filled ones come back."""

    free_send: Connection
    full_recv: Connection
    closed: bool = False  # the worker's end is gone (it exited); stop listening until it is replaced

    def close(self) -> None:
        self.free_send.close()
        self.full_recv.close()


class ProcessSource:
    """Rollout worker processes writing fragments into shared-memory slots (paper Fig. 2, HoK Fig. 1).

    Each worker owns ``slots_per_worker`` slots and talks to the learner over its own pair of pipes. Nothing is
    shared between workers but lock-free shared memory, so killing one (or the learner) at any moment cannot
    stall the others: a dead worker's pipes are dropped and its replacement gets fresh ones with every slot of
    the dead one that the learner is not holding.
    """

    def __init__(self, options: FragmentSourceOptions):
        self.recipe = options.recipe
        self.schema = options.schema
        self.params = options.params
        self.seed = options.seed
        self.n_workers = n_workers = options.workers
        self.slots_per_worker = slots_per_worker = options.slots_per_worker
        self.heartbeat_timeout_s = options.heartbeat_timeout_s
        self.startup_timeout_s = options.startup_timeout_s
        self.run_dir = str(options.run_dir) if options.run_dir is not None else None
        self.ctx = mp.get_context("spawn")
        specs = recipe_fragment_specs(self.recipe, self.schema)
        self.n_slots = n_workers * slots_per_worker
        self.slots = FragmentSlots(specs, self.n_slots, create=True)
        self.ctrl_block = FragmentSlots(control_specs(n_workers, self.n_slots), 1, create=True)
        self.ctrl = self.ctrl_block.slots[0]
        self.ctrl["workers"][:] = 0
        self.ctrl["slot_state"][:] = SLOT_FREE
        self.ctrl["stop"][:] = 0
        self.held: set[int] = set()  # slots handed out by get() and not yet released
        self.pipes: list[WorkerPipes | None] = [None] * n_workers
        # Where get() starts looking, so that no worker's fragments wait behind another's.
        self._next_worker = 0
        self.generation = [0] * n_workers
        self.procs: list = [None] * n_workers
        self.started_at = [0.0] * n_workers
        # train.acting = "server": the latest network acts in one inference process, started before the workers
        # (inference.py); each worker gets a pipe to it and a slot of its request block.
        self.inference = InferenceProcess(options) if options.acting == "server" else None
        for w in range(n_workers):
            self._start(w)

    def owner_of(self, slot: int) -> int:
        return slot // self.slots_per_worker

    def _start(self, w: int) -> None:
        if self.pipes[w] is not None:
            self.pipes[w].close()  # drops whatever the previous worker left in them
        free_recv, free_send = self.ctx.Pipe(duplex=False)
        full_recv, full_send = self.ctx.Pipe(duplex=False)
        self.pipes[w] = WorkerPipes(free_send, full_recv)
        for slot in range(w * self.slots_per_worker, (w + 1) * self.slots_per_worker):
            if slot not in self.held:
                self.ctrl["slot_state"][slot] = SLOT_FREE
                free_send.send_bytes(encode_slot(slot))
        seed = worker_seed(self.seed, w, self.generation[w], max(self.params.version, 0))
        infer_conn = self.inference.connect(w) if self.inference is not None else None
        self.ctrl["workers"][w, CTRL_HEARTBEAT] = time.time()
        self.ctrl["workers"][w, CTRL_READY] = 0.0
        proc = self.ctx.Process(
            target=worker_main,
            name=f"fivectl-worker-{w}",
            kwargs=dict(
                worker_id=w,
                generation=self.generation[w],
                recipe_dict=self.recipe.to_dict(),
                schema_json=self.schema.to_json(),
                seed=seed,
                slots=SharedBlock(_specs_as_lists(self.slots.specs), self.slots.shm_name, self.n_slots),
                params=SharedBlock(_specs_as_lists(self.params.specs), self.params.shm_name),
                ctrl=SharedBlock(_specs_as_lists(self.ctrl_block.specs), self.ctrl_block.shm_name),
                free_conn=free_recv,
                full_conn=full_send,
                run_dir=self.run_dir,
                inference=self.inference.block if self.inference is not None else None,
                infer_conn=infer_conn,
            ),
            daemon=True,
        )
        proc.start()
        # The worker has its own copies now. Closing ours means each side sees end-of-file when the other
        # dies: the learner stops listening to a dead worker, and workers exit when the learner is killed.
        free_recv.close()
        full_send.close()
        if infer_conn is not None:
            infer_conn.close()
        self.procs[w] = proc
        self.started_at[w] = time.time()

    def get(self, timeout: float = 1.0) -> tuple[int, dict[str, np.ndarray]] | None:
        deadline = time.monotonic() + timeout
        while True:
            listening = self._listening_order()
            remaining = deadline - time.monotonic()
            if not listening or remaining <= 0:
                return None
            ready = wait([pipes.full_recv for _, pipes in listening], timeout=remaining)
            for w, pipes in listening:
                if pipes.full_recv not in ready:
                    continue
                try:
                    slot = decode_slot(pipes.full_recv.recv_bytes())
                except (EOFError, OSError):
                    pipes.closed = True  # the worker exited; check_health() replaces it
                    continue
                self._next_worker = (w + 1) % self.n_workers
                self.held.add(slot)
                return slot, self.slots.slots[slot]

    def _listening_order(self) -> list[tuple[int, WorkerPipes]]:
        order = [(self._next_worker + i) % self.n_workers for i in range(self.n_workers)]
        return [(w, self.pipes[w]) for w in order if self.pipes[w] is not None and not self.pipes[w].closed]

    def release(self, slot: int) -> None:
        self.held.discard(slot)
        self.ctrl["slot_state"][slot] = SLOT_FREE
        try:
            self.pipes[self.owner_of(slot)].free_send.send_bytes(encode_slot(slot))
        except OSError:
            pass  # its worker is dead: the replacement gets the slot when it starts

    def check_health(self) -> list[WorkerEvent]:
        """Replace dead or hung workers; their partial fragments are discarded and their slots reclaimed."""
        events = []
        if self.inference is not None:
            server_events = self.inference.check_health(self.heartbeat_timeout_s, self.startup_timeout_s)
            events += server_events
            if server_events:  # a new server: every worker's pipe led to the old one, so they are replaced too
                for proc in self.procs:
                    proc.kill()
                    proc.join(timeout=5)
        now = time.time()
        for w, proc in enumerate(self.procs):
            beat = self.ctrl["workers"][w, CTRL_HEARTBEAT]
            # A starting worker builds its games and policy (and may compile kernels): a longer grace period.
            ready = self.ctrl["workers"][w, CTRL_READY] > 0
            limit = self.heartbeat_timeout_s if ready else self.startup_timeout_s
            if not proc.is_alive():
                events.append(WorkerEvent(w, "died", f"exit code {proc.exitcode}"))
            elif now - beat > limit:
                events.append(WorkerEvent(w, "hung", f"no heartbeat for {now - beat:.0f}s"))
                proc.kill()
            else:
                continue
            proc.join(timeout=5)
            self.generation[w] += 1
            self._start(w)
            events.append(WorkerEvent(w, "restarted", f"generation {self.generation[w]}"))
        return events

    def oldest_version_in_flight(self) -> int | None:
        """Lowest policy version a live worker is generating with (for the staleness 'wait' policy)."""
        versions = [
            int(self.ctrl["workers"][w, CTRL_VERSION])
            for w in range(self.n_workers)
            if self.procs[w].is_alive()
        ]
        return min(versions) if versions else None

    def stats(self) -> SourceStats:
        rows = self.ctrl["workers"]
        alive = sum(p.is_alive() for p in self.procs)
        in_flight = int((self.ctrl["slot_state"] != SLOT_FREE).sum())
        return SourceStats(
            alive,
            in_flight,
            float(rows[:, CTRL_SIM_S].sum()),
            float(rows[:, CTRL_INFER_S].sum()),
            float(rows[:, CTRL_WAIT_S].sum()),
            [int(v) for v in rows[:, CTRL_VERSION]],
            self.inference.metrics() if self.inference is not None else {},
        )

    def close(self) -> None:
        self.ctrl["stop"][0] = 1
        if self.inference is not None:
            self.inference.close()  # workers waiting on an answer see their pipe close and stop at once
        deadline = time.time() + 10
        for proc in self.procs:
            if proc is not None:
                proc.join(timeout=max(0.1, deadline - time.time()))
                if proc.is_alive():
                    proc.kill()
                    proc.join(timeout=2)
        for pipes in self.pipes:
            if pipes is not None:
                pipes.close()
        self.ctrl = {}
        self.slots.close(unlink=True)
        self.ctrl_block.close(unlink=True)
