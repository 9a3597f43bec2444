"""How the learner anneals a change of the game into its rollouts without knowing what the change is.

The anneal (``fivectl anneal``: the ramp of the fraction of games that run the change, the TrueSkill guard and
its reverts) is a feature above the runtime; the layer above hands the learner an object with this interface
(``fivectl.anneal.controller.AnnealController``), or nothing, and the learner only calls it. The change's name
reaches the workers through the recipe (``anneal.change``), its fraction with each published version.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np


class GameChangeHook(Protocol):
    @property
    def active(self) -> bool:
        """Is a change being annealed in?"""

    def fraction(self) -> float:
        """The fraction of new games that run the change, published to the workers with the parameters."""

    def advance(self, samples: int, version: int) -> list[str]:
        """Training reached ``samples`` (counters) at ``version``: move the ramp on; events to show."""

    def guard(self, version: int, ensure_checkpoint: Callable[[], None]) -> list[str]:
        """Start a guard evaluation when one is due (its checkpoint is written by ``ensure_checkpoint``) and
        apply the results that came in; events to show."""

    def finish(self, wait_s: float) -> list[str]:
        """Training stops: wait up to ``wait_s`` for the guard evaluation under way and apply it; events."""

    def versions_in_use(self) -> list[int]:
        """Checkpoint versions an evaluation is loading (retention keeps them)."""

    def metrics(self, fragments: list[dict[str, np.ndarray]]) -> dict[str, Any]:
        """The anneal's columns of the iteration's metrics row."""

    def state_dict(self) -> dict[str, Any] | None:
        """JSON state saved in every checkpoint (None: nothing to save)."""

    def load_state_dict(self, state: dict[str, Any] | None, samples: int, version: int) -> None:
        """Restore from a checkpoint's state (None: the checkpoint has none) at its counters."""

    def close(self) -> None: ...


class NoGameChange:
    """The hook of a run trained without an anneal."""

    active = False

    def fraction(self) -> float:
        return 0.0

    def advance(self, samples: int, version: int) -> list[str]:
        return []

    def guard(self, version: int, ensure_checkpoint: Callable[[], None]) -> list[str]:
        return []

    def finish(self, wait_s: float) -> list[str]:
        return []

    def versions_in_use(self) -> list[int]:
        return []

    def metrics(self, fragments: list[dict[str, np.ndarray]]) -> dict[str, Any]:
        return {}

    def state_dict(self) -> dict[str, Any] | None:
        return None

    def load_state_dict(self, state: dict[str, Any] | None, samples: int, version: int) -> None:
        pass

    def close(self) -> None:
        pass


def variant_share(fragments: list[dict[str, np.ndarray]]) -> float | None:
    """Share of the trained samples played in games that run the change (``variant`` [T, G] per fragment)."""
    total = under = 0
    for f in fragments:
        if "variant" not in f:
            continue
        T, B = f["train"].shape
        per_agent = np.repeat(f["variant"], B // f["variant"].shape[1], axis=1)  # games -> their agents
        total += int(f["train"].sum())
        under += int((f["train"] & per_agent).sum())
    return under / total if total else None
