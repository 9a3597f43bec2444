"""The anneal as the trainer runs it: the hook ``fivectl train`` hands the learner (``runtime/game_change_hook.py``).

Each iteration moves the ramp on by the samples trained; every ``guard_cadence`` versions the guard rates
the newest version under the new rules (one evaluation at a time, in its own process) and, when the result comes
in, keeps the ramp going or reverts it. Events are noted in the live view and logged in the metrics; the state goes
into every checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from fivectl.anneal.guard import GuardEvaluator, guard_cadence, guard_games
from fivectl.anneal.ramp import GUARD_REVERT, GuardEvent, RampState
from fivectl.config import Recipe
from fivectl.runtime.game_change_hook import NoGameChange, variant_share
from fivectl.store.rundir import RunDir

ANNEAL_META = "anneal"
"""run.json key of the anneal under way: ``{"change", "started", "baseline", "start_version"}``."""


class Guard(Protocol):
    def busy(self) -> bool: ...

    def submit(self, version: int) -> bool: ...

    def result(self, version: int) -> dict[str, float] | None | bool: ...

    def wait(self, timeout_s: float) -> bool: ...

    def close(self, wait_s: float = 0.0) -> None: ...


class AnnealController:
    def __init__(self, recipe: Recipe, meta: dict[str, Any], guard: Guard):
        self.recipe = recipe
        self.meta = meta
        self.guard_runner = guard
        self.every, _ = guard_cadence(recipe)
        self.state: RampState | None = None
        self.events: list[GuardEvent] = []  # applied since the last metrics row

    @classmethod
    def for_run(cls, run_dir: Path, recipe: Recipe) -> AnnealController | NoGameChange:
        """The anneal the run's recipe and ``run.json`` describe; the no-op hook when none is under way."""
        meta = RunDir.open(run_dir).meta.get(ANNEAL_META)
        if not recipe.anneal.change or not isinstance(meta, dict):
            return NoGameChange()
        return cls(recipe, meta, GuardEvaluator(run_dir, recipe.anneal.change, guard_games(recipe)))

    @property
    def active(self) -> bool:
        return True

    def fraction(self) -> float:
        return self.state.fraction if self.state is not None else 0.0

    # ---- checkpoints -------------------------------------------------------------------------------------------

    def load_state_dict(self, state: dict[str, Any] | None, samples: int, version: int) -> None:
        """The checkpoint's state if it belongs to this anneal, else a new ramp starting at these counters."""
        cfg = self.recipe.anneal
        if state is not None and state.get("started") == self.meta.get("started"):
            self.state = RampState.from_json(state)
            if self.state.pending is not None:
                self.state.pending["submitted"] = False  # its process died with the trainer: start it again
            # settings changed with `anneal start`'s flags or --set apply from here on
            self.state.over, self.state.guard, self.state.slowdown = cfg.over_samples, cfg.guard, cfg.slowdown
            return
        self.state = RampState(
            change=cfg.change,
            started=str(self.meta.get("started", "")),
            over=cfg.over_samples,
            guard=cfg.guard,
            slowdown=cfg.slowdown,
            baseline=dict(self.meta["baseline"]),
            start_samples=samples,
            start_version=version,
            samples=samples,
        )

    def state_dict(self) -> dict[str, Any] | None:
        return self.state.to_json() if self.state is not None else None

    # ---- training ----------------------------------------------------------------------------------------------

    def advance(self, samples: int, version: int) -> list[str]:
        assert self.state is not None
        before = self.state.fraction
        self.state.advance(samples)
        if before < 1.0 <= self.state.fraction:
            return [f"anneal: {self.state.change} runs in every game now (`fivectl anneal stop RUN --keep`)"]
        return []

    def guard(self, version: int, ensure_checkpoint: Callable[[], None]) -> list[str]:
        assert self.state is not None
        notes = self._collect()
        pending = self.state.pending
        due = self.every > 0 and version > self.state.start_version and version % self.every == 0
        if pending is None and due and not self.guard_runner.busy():
            ensure_checkpoint()
            if self.guard_runner.submit(version):
                self.state.pending = {"version": version, "fraction": self.state.fraction}
                notes.append(f"anneal guard: rating v{version} under {self.state.change} (TrueSkill)")
        elif pending is not None and not self.guard_runner.busy() and pending.get("submitted") is False:
            self.guard_runner.submit(int(pending["version"]))  # resumed with an evaluation under way
            pending["submitted"] = True
        return notes

    def _collect(self) -> list[str]:
        """Apply the result of the evaluation under way, if it has come in."""
        state = self.state
        assert state is not None
        if state.pending is None or state.pending.get("submitted") is False:
            return []
        version, fraction = int(state.pending["version"]), float(state.pending["fraction"])
        result = self.guard_runner.result(version)
        if result is None:
            return []
        state.pending = None
        if result is False:
            return [f"anneal guard: no rating for v{version} (league busy?); the next version will do"]
        event = state.judge(version, fraction, result["mu"], result["sigma"])
        self.events.append(event)
        if event.action == GUARD_REVERT:
            return [
                f"anneal guard: v{version} rated {event.mu:.1f}, {event.drop:.1f} below the start "
                f"({state.baseline['mu']:.1f}): fraction back to {event.fraction_after:.3f}, "
                f"ramp speed {event.speed_after:g}"
            ]
        return [f"anneal guard: v{version} rated {event.mu:.1f} (start {state.baseline['mu']:.1f}): ok"]

    def finish(self, wait_s: float) -> list[str]:
        pending = self.state.pending if self.state is not None else None
        if pending is None or pending.get("submitted") is False:
            return []
        if not self.guard_runner.wait(wait_s):
            self.guard_runner.close()
            pending["submitted"] = False  # unfinished: it starts again on resume
            return []
        return self._collect()

    def versions_in_use(self) -> list[int]:
        """Kept by checkpoint retention: the version being rated, and the start version, which every guard
        evaluation plays (a reference of the guard's league)."""
        pending = self.state.pending if self.state is not None else None
        in_use = [int(self.meta["baseline"]["version"])]
        return in_use + ([int(pending["version"])] if pending is not None else [])

    def metrics(self, fragments: list[dict[str, np.ndarray]]) -> dict[str, Any]:
        assert self.state is not None
        row: dict[str, Any] = {
            "anneal_fraction": self.state.fraction,
            "anneal_speed": self.state.speed,
            "anneal_variant_share": variant_share(fragments),
            "anneal_reverts": self.state.reverts,
        }
        if self.events:
            last = self.events[-1]
            row.update(
                anneal_guard_version=last.version,
                anneal_guard_mu=last.mu,
                anneal_guard_drop=last.drop,
                anneal_guard_revert=int(last.action == GUARD_REVERT),
            )
            self.events = []
        return row

    def close(self) -> None:
        self.guard_runner.close()
