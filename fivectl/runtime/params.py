"""The parameter store (the paper's controller, Fig. 2): the learner publishes versions, workers read them.

The model's whole ``state_dict`` (parameters and normalizer buffers) lives in one shared-memory block. A
sequence lock makes reads consistent without blocking the learner: the writer makes the sequence odd, copies,
then makes it even; a reader that saw an odd or changed sequence copies again.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from fivectl.runtime.buffers import ArraySpec, FragmentSlots

# Header: [sequence, version]; values published with the parameters (schedules the workers need).
HEADER_KEYS = ("seq", "version")
SCALAR_KEYS = ("team_spirit", "samples", "pool_size", "bot_fraction", "change_fraction", "off_lane")
MAX_PUBLISHED_POOL = 512
"""The opponent pool's versions and sampling probabilities travel with the parameters (the most likely ones)."""


def state_specs(state: dict[str, torch.Tensor]) -> list[ArraySpec]:
    specs = [
        ArraySpec("__header", (len(HEADER_KEYS),), "int64"),
        ArraySpec("__scalars", (len(SCALAR_KEYS),), "float64"),
        ArraySpec("__pool_versions", (MAX_PUBLISHED_POOL,), "int64"),
        ArraySpec("__pool_probs", (MAX_PUBLISHED_POOL,), "float64"),
    ]
    for name, t in state.items():
        specs.append(
            ArraySpec(name, tuple(t.shape), str(t.numpy().dtype) if t.dtype != torch.bfloat16 else "float32")
        )
    return specs


class ParameterStore:
    """Shared (or, in serial mode, local) storage of the latest published parameters."""

    def __init__(
        self, specs: list[ArraySpec], shm_name: str | None = None, create: bool = False, shared: bool = True
    ):
        self.specs = specs
        self._slots = FragmentSlots(specs, 1, shm_name=shm_name, create=create, shared=shared)
        self.views = self._slots.slots[0]
        if create or not shared:
            self.views["__header"][:] = 0
            self.views["__scalars"][:] = 0
        self.last_pool: tuple[np.ndarray, np.ndarray] = (np.zeros(0, np.int64), np.zeros(0))

    @classmethod
    def for_model(cls, model: torch.nn.Module, shared: bool = True) -> ParameterStore:
        return cls(state_specs(model.state_dict()), create=True, shared=shared)

    @property
    def shm_name(self) -> str | None:
        return self._slots.shm_name

    @property
    def version(self) -> int:
        return int(self.views["__header"][1])

    def publish(
        self,
        model: torch.nn.Module,
        version: int,
        pool: tuple[np.ndarray, np.ndarray] | None = None,
        **scalars: float,
    ) -> None:
        """Publish ``model``'s state as ``version``, with schedule values and the opponent pool (versions, p)."""
        header = self.views["__header"]
        header[0] += 1  # odd: writing
        for name, t in model.state_dict().items():
            self.views[name][...] = t.detach().cpu().numpy()
        if pool is not None:
            versions, probs = pool
            if len(versions) > MAX_PUBLISHED_POOL:
                top = np.argsort(probs)[-MAX_PUBLISHED_POOL:]
                versions, probs = np.asarray(versions)[top], np.asarray(probs)[top]
            n = len(versions)
            self.views["__pool_versions"][:n] = versions
            self.views["__pool_probs"][:n] = (
                np.asarray(probs) / max(float(np.sum(probs)), 1e-12) if n else probs
            )
            scalars["pool_size"] = n
        values = self.views["__scalars"]
        for i, key in enumerate(SCALAR_KEYS):
            if key in scalars:
                values[i] = scalars[key]
        header[1] = version
        header[0] += 1  # even: consistent

    def read_into(
        self, model: torch.nn.Module | None, timeout_s: float = 30.0
    ) -> tuple[int, dict[str, float]]:
        """Copy the latest consistent parameters into ``model``; returns (version, scalars). With ``model`` None
        only the version, scalars and pool are read (a worker whose latest network acts in the inference
        server)."""
        header = self.views["__header"]
        deadline = time.monotonic() + timeout_s
        state = model.state_dict() if model is not None else {}
        while True:
            seq = int(header[0])
            if seq % 2 == 0:
                with torch.no_grad():
                    for name, t in state.items():
                        t.copy_(torch.from_numpy(self.views[name]))
                version = int(header[1])
                scalars = {k: float(v) for k, v in zip(SCALAR_KEYS, self.views["__scalars"], strict=True)}
                n = int(scalars["pool_size"])
                pool = (self.views["__pool_versions"][:n].copy(), self.views["__pool_probs"][:n].copy())
                if int(header[0]) == seq:
                    self.last_pool = pool
                    return version, scalars
            if time.monotonic() > deadline:
                raise TimeoutError("parameter store stayed inconsistent (is the learner stuck mid-publish?)")
            time.sleep(0.0005)

    def snapshot(self) -> np.ndarray:
        """A copy of the whole store (parameters, version, schedules, pool) as one byte array, for a transport
        that cannot share memory (Ray's object store). Taken in the learner's process, between publishes."""
        return self._slots.raw(0).copy()

    def load_snapshot(self, raw: np.ndarray) -> None:
        """Make this (local) store hold a ``snapshot()`` of another; readers pick its version up as usual."""
        self._slots.raw(0)[:] = raw

    def close(self, unlink: bool = False) -> None:
        self.views = {}
        self._slots.close(unlink=unlink)
