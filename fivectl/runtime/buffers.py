"""Fragment buffers in shared memory: what rollout workers write and the learner reads.

A fragment is ``T`` consecutive steps of one worker's batch of games. Its arrays live in one slot of a
``multiprocessing.shared_memory`` block, so the learner reads them without pickling (measured here: ~18 GiB/s
for shared memory against ~1 GiB/s through a pickling queue). Only slot numbers travel through pipes.
"""

from __future__ import annotations

import gc
import math
from dataclasses import dataclass
from multiprocessing import shared_memory

import numpy as np

from fivectl.config import Recipe
from fivectl.schema import ObsSchema
from fivectl.sim import REWARD_COMPONENTS

ALIGN = 64


@dataclass(frozen=True)
class ArraySpec:
    key: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return int(math.prod(self.shape)) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class SharedBlock:
    """How another process attaches to a shared-memory block the learner created."""

    specs: list  # (key, shape, dtype) of each array of a slot
    name: str  # the shared memory's name
    slots: int = 1

    def attach(self) -> FragmentSlots:
        return FragmentSlots([ArraySpec(*s) for s in self.specs], self.slots, shm_name=self.name)

    @classmethod
    def of(cls, block: FragmentSlots) -> SharedBlock:
        return cls([(s.key, s.shape, s.dtype) for s in block.specs], block.shm_name, block.n_slots)


def fragment_specs(
    schema: ObsSchema,
    *,
    steps: int,
    games: int,
    team_size: int,
    lstm_size: int,
    bptt: int,
    n_objectives: int = 0,
) -> list[ArraySpec]:
    """Every array of one fragment. ``B`` = agents = games × 2 × team_size, teammates contiguous;
    ``n_objectives`` = len(model.aux_objectives) (the objective arrays are left out when 0)."""
    agents = games * 2 * team_size
    T, B, G = steps, agents, games
    windows = steps // bptt
    specs = [
        ArraySpec(f"obs.{key}", (T, B, *shape), dtype) for key, (shape, dtype) in schema.array_specs().items()
    ]
    specs += [
        ArraySpec("actions", (T, B, 4), "int32"),
        ArraySpec("logprob", (T, B), "float32"),
        ArraySpec("value", (T, B), "float32"),
        ArraySpec("win_prob", (T, B), "float32"),
        ArraySpec("reward", (T, B), "float32"),
        ArraySpec("components", (T, B, len(REWARD_COMPONENTS)), "float32"),
        # done[t]: the agent's game ended after step t; first[t]: its game began at step t (reset LSTM state).
        ArraySpec("done", (T, B), "bool"),
        ArraySpec("first", (T, B), "bool"),
        # outcome at done steps: 1 win, 0 loss, 0.5 draw (target of the win-probability head).
        ArraySpec("outcome", (T, B), "float32"),
        # train[t, b]: the learner trains on this sample (False for agents played by a past opponent).
        ArraySpec("train", (T, B), "bool"),
        # Facts the auxiliary heads learn from (paper D; fivectl.rl.aux makes the labels): the hero's net worth
        # at the observation of step t (and, below, whether it helped destroy each objective during step t).
        ArraySpec("networth", (T, B), "float32"),
        ArraySpec("opponent", (T, G), "int32"),  # -1 latest parameters, else the past version playing
        ArraySpec("learner_side", (T, G), "int8"),  # the team the learner plays against a past version
        # A result of the policy's: at the last step of a game, its length and winner (-1 a draw); 0 and -1
        # elsewhere, and for a game the policy took over midway (runtime/stagger.py).
        ArraySpec("game_seconds", (T, G), "float32"),
        ArraySpec("winner", (T, G), "int8"),
        ArraySpec("invalid_actions", (T, G), "int32"),
        # The game at step t runs the change being annealed in (``fivectl anneal``; drawn when the game started).
        ArraySpec("variant", (T, G), "bool"),
        # LSTM state at the start of every BPTT window (truncated BPTT starts each window from it).
        ArraySpec("h_win", (windows, B, lstm_size), "float32"),
        ArraySpec("c_win", (windows, B, lstm_size), "float32"),
        ArraySpec("last_value", (B,), "float32"),
        ArraySpec("last_win_prob", (B,), "float32"),
        # Predicted net-worth rank probabilities after the fragment: the label where no game end is ahead.
        ArraySpec("last_networth_rank", (B, team_size), "float32"),
        # header: [policy version (the oldest that acted in the fragment), worker id, fragment counter, valid]
        ArraySpec("header", (4,), "int64"),
    ]
    if n_objectives:
        specs += [
            ArraySpec("objective_events", (T, B, n_objectives), "bool"),
            ArraySpec("last_objectives", (B, n_objectives), "float32"),
        ]
    return specs


def recipe_fragment_specs(recipe: Recipe, schema: ObsSchema) -> list[ArraySpec]:
    """The fragment layout a recipe's workers write."""
    t = recipe.train
    return fragment_specs(
        schema,
        steps=t.fragment_length,
        games=t.games_per_worker,
        team_size=recipe.game.team_size,
        lstm_size=recipe.model.lstm_size,
        bptt=t.bptt,
        n_objectives=len(recipe.model.aux_objectives),
    )


def slot_layout(specs: list[ArraySpec]) -> tuple[dict[str, int], int]:
    """Byte offset of every array inside a slot, each aligned to 64 bytes; and the slot size."""
    offsets, pos = {}, 0
    for s in specs:
        offsets[s.key] = pos
        pos += -(-s.nbytes // ALIGN) * ALIGN
    return offsets, pos


class FragmentSlots:
    """``n_slots`` fragment slots over one buffer (shared memory, or plain memory in serial mode)."""

    def __init__(
        self,
        specs: list[ArraySpec],
        n_slots: int,
        shm_name: str | None = None,
        create: bool = False,
        shared: bool = True,
    ):
        self.specs = specs
        self.n_slots = n_slots
        self.offsets, self.slot_bytes = slot_layout(specs)
        total = max(self.slot_bytes * n_slots, 1)
        self._shm: shared_memory.SharedMemory | None = None
        if shared:
            if create:
                self._shm = shared_memory.SharedMemory(create=True, size=total)
            else:
                # Worker processes share the creator's resource tracker (spawn), which unlinks the block
                # only if the creator leaks it.
                self._shm = shared_memory.SharedMemory(name=shm_name)
            buf = self._shm.buf
        else:
            buf = memoryview(bytearray(total))
        self._base = np.frombuffer(buf, dtype=np.uint8, count=total)
        self.slots = [self._views(i) for i in range(n_slots)]

    @property
    def shm_name(self) -> str | None:
        return self._shm.name if self._shm else None

    def _views(self, slot: int) -> dict[str, np.ndarray]:
        return slot_views(self.specs, self.raw(slot), self.offsets)

    def raw(self, slot: int) -> np.ndarray:
        """The bytes of one slot (uint8): how a fragment or a parameter version travels as one array."""
        start = slot * self.slot_bytes
        return self._base[start : start + self.slot_bytes]

    def close(self, unlink: bool = False) -> None:
        """Drop this object's views, then unmap (and, for the creator, unlink) the block. Views held elsewhere
        keep the mapping alive until they go; the block's name is unlinked in any case."""
        self.slots = []
        self._base = None  # type: ignore[assignment]
        gc.collect()
        if self._shm is not None:
            try:
                self._shm.close()
            except BufferError:
                # Views still referenced elsewhere: the mapping goes with the process. Forget it here so
                # SharedMemory.__del__ does not retry (and print) at interpreter exit.
                self._shm._mmap = None  # type: ignore[attr-defined]
                self._shm._buf = None  # type: ignore[attr-defined]
            if unlink:
                try:
                    self._shm.unlink()
                except FileNotFoundError:
                    pass
            self._shm = None


def slot_views(
    specs: list[ArraySpec], raw: np.ndarray, offsets: dict[str, int] | None = None
) -> dict[str, np.ndarray]:
    """The arrays of one slot over its bytes ``raw`` (a shared-memory slot, or a fragment received whole)."""
    offsets = offsets if offsets is not None else slot_layout(specs)[0]
    return {
        s.key: raw[offsets[s.key] : offsets[s.key] + s.nbytes].view(s.dtype).reshape(s.shape) for s in specs
    }


def copy_fragment(views: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Take a fragment out of its slot so the slot can go back to the workers at once."""
    return {k: np.array(v, copy=True) for k, v in views.items()}
