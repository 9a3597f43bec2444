"""The anneal's ramp: the fraction of new games that run the change, as a function of the samples trained on.

The ramp has a position measured in samples: each sample trained on moves it by the current speed (1 at the
start), and the fraction is ``min(1, position / over)``. A guard evaluation that passes marks the fraction its
version was trained at as good; one that fails moves the position back to the last good fraction and multiplies
the speed by ``slowdown`` (paper B: "if TrueSkill dropped we reverted the change and slowed its annealing").
The whole state is plain JSON, saved in every checkpoint, so a resumed run continues at the exact fraction its
checkpoint had.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from fivectl.errors import FivectlError

GUARD_OK = "ok"
GUARD_REVERT = "revert"


@dataclass
class GuardEvent:
    """One guard evaluation: the version rated under the new rules, the fraction it was trained at, its rating,
    the drop below the baseline and what the guard did."""

    version: int
    samples: int  # when its result was applied
    fraction: float  # the fraction the version was trained at
    mu: float
    sigma: float
    drop: float
    action: str  # GUARD_OK | GUARD_REVERT
    fraction_after: float
    speed_after: float


@dataclass
class RampState:
    change: str
    started: (
        str  # when `fivectl anneal start` was run: tells this anneal from an earlier one of the same change
    )
    over: float  # samples from 0 to 1 at speed 1
    guard: float
    slowdown: float
    baseline: dict[str, float]  # {"version", "mu", "sigma"}: the rating at the start of the anneal
    start_samples: int
    start_version: int
    samples: int  # the samples the position was last moved to
    position: float = 0.0
    speed: float = 1.0
    last_good: float = 0.0
    history: list[GuardEvent] = field(default_factory=list)
    pending: dict[str, float] | None = None  # {"version", "fraction"}: a guard evaluation under way

    @property
    def fraction(self) -> float:
        return min(1.0, self.position / self.over)

    @property
    def reverts(self) -> int:
        return sum(1 for e in self.history if e.action == GUARD_REVERT)

    def advance(self, samples: int) -> None:
        """Training is at ``samples``: the position moves by the samples since the last call times the speed."""
        if samples < self.samples:
            raise FivectlError(f"anneal: samples went back from {self.samples} to {samples}")
        self.position = min(self.over, self.position + (samples - self.samples) * self.speed)
        self.samples = samples

    def judge(self, version: int, fraction: float, mu: float, sigma: float) -> GuardEvent:
        """Apply a guard evaluation of ``version`` (trained at ``fraction``): keep going, or revert and slow."""
        drop = float(self.baseline["mu"]) - mu
        if drop > self.guard:
            self.position = min(self.position, self.last_good * self.over)
            self.speed *= self.slowdown
            action = GUARD_REVERT
        else:
            self.last_good = fraction  # the version trained at it kept its rating
            action = GUARD_OK
        event = GuardEvent(
            version, self.samples, fraction, mu, sigma, drop, action, self.fraction, self.speed
        )
        self.history.append(event)
        return event

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RampState:
        data = dict(data)
        data["history"] = [GuardEvent(**e) for e in data.get("history", [])]
        return cls(**data)
