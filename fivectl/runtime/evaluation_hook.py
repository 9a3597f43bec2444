"""How the learner asks for periodic evaluation of its new versions without knowing who evaluates.

Evaluation (TrueSkill matches) is a feature above the runtime; the layer above hands the learner an object with
this interface (``fivectl.evaluate.periodic.PeriodicEvaluator``), or nothing, and the learner only calls it.
"""

from __future__ import annotations

from typing import Protocol


class EvaluationHook(Protocol):
    @property
    def enabled(self) -> bool: ...

    def due(self, version: int) -> bool:
        """Is ``version`` one to evaluate (and not yet handed over)?"""

    def busy(self) -> bool:
        """Is an earlier evaluation still running?"""

    def submit(self, version: int) -> bool:
        """Start evaluating ``version`` (its checkpoint is on disk); False when it could not start."""

    def latest_rating(self) -> dict | None:
        """``{"version", "mu", "sigma"}`` of the newest rated version, or None."""

    def close(self, wait_s: float = 0.0) -> None: ...


class NoEvaluation:
    """The hook of a run trained without periodic evaluation."""

    enabled = False

    def due(self, version: int) -> bool:
        return False

    def busy(self) -> bool:
        return False

    def submit(self, version: int) -> bool:
        return False

    def latest_rating(self) -> dict | None:
        return None

    def close(self, wait_s: float = 0.0) -> None:
        pass
