"""How the learner asks for periodic evaluation of its new versions without knowing who evaluates.

Evaluation (TrueSkill matches) is a feature above the runtime; the layer above hands the learner an object with
this interface (``fivectl.evaluate.periodic.PeriodicEvaluator``), or nothing, and the learner only calls it.
``BackgroundEvaluations`` is the learner's side: it hands new versions to that hook, and drives the anneal's
TrueSkill guard (``GameChangeHook.guard``), the other evaluation that runs beside training.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from fivectl.runtime.game_change_hook import GameChangeHook

if TYPE_CHECKING:
    from fivectl.runtime.checkpointing import Checkpointing

CLOSE_WAIT_S = 120.0  # a clean stop waits this long for an evaluation under way


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


class BackgroundEvaluations:
    """The evaluations of new versions that run beside training: the periodic rating (recipe
    ``eval.every_versions``) and the anneal's guard. Each loads a checkpoint, written here when it is due."""

    def __init__(self, anneal: GameChangeHook, checkpoints: Checkpointing, note: Callable[[str], None]):
        self.hook: EvaluationHook = NoEvaluation()
        self.anneal = anneal
        self.checkpoints = checkpoints
        self.note = note

    def start(self, hook: EvaluationHook) -> None:
        """Rate new versions with ``hook`` from now on."""
        self.hook = hook

    def after_iteration(self, version: int) -> None:
        self.maybe_evaluate(version)
        for event in self.anneal.guard(version, self.checkpoints.ensure_current):
            self.note(event)

    def maybe_evaluate(self, version: int) -> None:
        if not self.hook.due(version) or self.hook.busy():
            return
        self.checkpoints.ensure_current()
        if self.hook.submit(version):
            self.note(f"evaluating v{version} (TrueSkill) in the background")

    def latest_rating(self) -> dict | None:
        return self.hook.latest_rating() if self.hook.enabled else None

    def finish(self, interrupted: bool) -> None:
        """A clean stop waits for the anneal's guard evaluation under way and checkpoints its verdict (a stop
        by signal does not wait: the evaluation starts again on resume)."""
        if interrupted:
            return
        events = self.anneal.finish(wait_s=CLOSE_WAIT_S)
        for event in events:
            self.note(event)
        if events:
            self.checkpoints.save()  # the same version, now with the verdict in its anneal state

    def close(self, interrupted: bool) -> None:
        self.hook.close(wait_s=0.0 if interrupted else CLOSE_WAIT_S)
        self.anneal.close()
