"""The fragment source: how rollout fragments reach the learner, whatever carries them.

Three transports give the learner the same thing:

    ProcessSource (fragment_queue.py)  worker processes, fragments in shared-memory slots, a pair of pipes each
    SerialSource  (fragment_queue.py)  one worker in the learner's own process (serial mode, ``--workers 0``)
    RaySource     (ray_backend.py)     Ray actors on any node, fragments through the object store

The learner ``get()``s a filled slot, copies it and ``release()``s it; between fragments it asks for
``check_health()`` (dead or hung workers are replaced), ``stats()`` for its metrics row and, under the staleness
'wait' policy, ``oldest_version_in_flight()``. Every transport is built from one :class:`FragmentSourceOptions`;
:func:`open_fragment_source` picks the one a run asks for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from fivectl.config import Recipe
from fivectl.runtime.params import ParameterStore
from fivectl.schema import ObsSchema


@dataclass
class WorkerEvent:
    worker_id: int
    kind: str  # "died" | "hung" | "restarted"
    detail: str = ""
    who: str = ""  # what the event is about when it is not a worker (the inference server)

    @property
    def subject(self) -> str:
        return self.who or f"worker {self.worker_id}"


@dataclass
class SourceStats:
    workers_alive: int
    fragments_in_flight: int
    seconds_sim: float
    seconds_infer: float
    seconds_worker_wait: float
    worker_versions: list[int] = field(default_factory=list)
    inference: dict[str, float] = field(default_factory=dict)  # the inference server's metrics (acting server)


@dataclass(frozen=True)
class FragmentSourceOptions:
    """What every transport is built from (serial mode reads only the first four and ``run_dir``)."""

    recipe: Recipe
    schema: ObsSchema
    params: ParameterStore  # the published versions the workers play with
    seed: int  # the run's seed; each worker's game seed derives from it (worker.worker_seed)
    workers: int = 0
    slots_per_worker: int = 2  # fragments a worker may have filled or in progress at once
    heartbeat_timeout_s: float = 120.0  # a ready worker silent this long is hung: it is replaced
    startup_timeout_s: float = 900.0  # the same for a worker still starting (it may compile kernels)
    run_dir: Path | None = None  # past versions (the opponent pool) and replays are read and written here
    acting: str = "worker"  # train.acting resolved (inference.resolve_acting): "worker" or "server"
    device: str = "cpu"  # where the inference server runs the latest network (the learner's device)


@runtime_checkable
class FragmentSource(Protocol):
    def get(self, timeout: float = 1.0) -> tuple[int, dict[str, np.ndarray]] | None:
        """A filled slot and its arrays, or None when none came within ``timeout`` seconds."""

    def release(self, slot: int) -> None:
        """The learner has copied the slot out: its worker may fill it again."""

    def check_health(self) -> list[WorkerEvent]:
        """Replace dead or hung workers; what happened, for the live view."""

    def stats(self) -> SourceStats: ...

    def oldest_version_in_flight(self) -> int | None:
        """Lowest policy version a live worker is generating with (None: none known)."""

    def close(self) -> None: ...


def open_fragment_source(backend: str, options: FragmentSourceOptions) -> FragmentSource:
    """The transport of ``train.backend``: Ray actors for "ray"; for "local", worker processes, or the serial
    source when ``options.workers`` is 0."""
    # The transports import this module for the types above, so they are imported when one is opened.
    if backend == "ray":
        from fivectl.runtime.ray_backend import RaySource

        return RaySource(options)
    from fivectl.runtime.fragment_queue import ProcessSource, SerialSource

    return ProcessSource(options) if options.workers > 0 else SerialSource(options)
