"""Disk retention over a long run: the opponent pool's past checkpoints slimmed to their model, off the
learner's thread.

Slimming is bound by fsync (mostly waiting, little CPU), so running it inline would stall the learner at every
checkpoint. One background thread
sweeps instead; a sweep that is still running when the next checkpoint lands is simply not restarted (each
sweep covers every version outside the window, so nothing is missed).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

from fivectl.store.checkpoint import CheckpointStore


class PoolSlimmer:
    """``kick()`` after each checkpoint; ``close()`` when training ends. An error of the last sweep (a full or
    read-only disk) is raised by the next ``kick`` or by ``close``."""

    def __init__(self, store: CheckpointStore, keep_last: int, milestone_every: int):
        self.store = store
        self.keep_last = keep_last
        self.milestone_every = milestone_every
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fivectl-slim")
        self._pending: Future | None = None
        self.slimmed = 0

    def kick(self) -> None:
        if self._pending is not None:
            if not self._pending.done():
                return
            self._collect()
        self._pending = self._executor.submit(self.store.slim_old, self.keep_last, self.milestone_every)

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        if self._pending is not None:
            self._collect()

    def _collect(self) -> None:
        pending, self._pending = self._pending, None
        self.slimmed += len(pending.result())
