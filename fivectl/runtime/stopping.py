"""When training stops: a signal, or a budget of the recipe (``train.max_samples``, ``train.max_minutes``).

Ctrl-C or SIGTERM (schedulers, `timeout`) asks the loop to finish its iteration, write a checkpoint and stop; a
second one interrupts at once. The fragment intake and the publisher's staleness wait stop waiting as soon as a
stop is asked for.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from fivectl.config.train import TrainConfig


class TrainingStop:
    def __init__(self, train_cfg: TrainConfig):
        self.train_cfg = train_cfg
        self.requested = False  # by a signal
        self.reason = ""  # why training stopped: "interrupted", "max_samples", "max_minutes"

    def __call__(self, *_: Any) -> None:  # the signal handler
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.reason = "interrupted"

    def is_requested(self) -> bool:
        return self.requested

    @property
    def interrupted(self) -> bool:
        return self.reason == "interrupted"

    def due(self, samples: int, start: float) -> bool:
        """Stop now? ``samples``: trained so far; ``start``: this session's start (``time.monotonic``)."""
        t = self.train_cfg
        if self.requested:
            return True
        if t.max_samples and samples >= t.max_samples:
            self.reason = "max_samples"
            return True
        if t.max_minutes and (time.monotonic() - start) / 60.0 >= t.max_minutes:
            self.reason = "max_minutes"
            return True
        return False


@contextmanager
def stop_signals(handler: Callable[..., None]) -> Iterator[None]:
    """Route SIGINT and SIGTERM to ``handler`` for the block, then restore the previous handlers."""
    old_handlers = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in old_handlers.items():
            signal.signal(sig, old)
