"""Recipe fields: a dataclass field with its documentation and range, and schedules.

Every recipe section is a dataclass whose fields are declared with :func:`param`, so one declaration
gives the default, the help text shown by ``fivectl recipe show --docs`` and the validation rule.
"""

from __future__ import annotations

import bisect
import dataclasses
from dataclasses import dataclass, field
from typing import Any


def param(
    default: Any = dataclasses.MISSING,
    doc: str = "",
    *,
    factory: Any = None,
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    le: float | None = None,
    choices: tuple | list | None = None,
) -> Any:
    """Declare a recipe field with its docstring and its allowed range or choices."""
    metadata = {
        "doc": doc,
        "gt": gt,
        "ge": ge,
        "lt": lt,
        "le": le,
        "choices": tuple(choices) if choices else None,
    }
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass
class Schedule:
    """A value that changes with training progress: piecewise over ``points`` [(x, y), ...].

    In TOML a schedule is a number (constant) or a table:
    ``{ points = [[0, 5e-5], [2e9, 1e-5]], interp = "linear", unit = "samples" }``.
    ``unit`` is what x counts: ``samples`` (agent-steps consumed by the learner) or ``versions``
    (published parameter versions). ``interp`` is ``linear`` or ``step`` (paper Table 2 changes values in steps).
    """

    points: list[list[float]]
    interp: str = "linear"
    unit: str = "samples"

    @classmethod
    def constant(cls, value: float) -> Schedule:
        return cls(points=[[0.0, float(value)]])

    def __call__(self, x: float) -> float:
        xs = [p[0] for p in self.points]
        ys = [p[1] for p in self.points]
        if x <= xs[0]:
            return float(ys[0])
        if x >= xs[-1]:
            return float(ys[-1])
        i = bisect.bisect_right(xs, x) - 1
        if self.interp == "step":
            return float(ys[i])
        frac = (x - xs[i]) / (xs[i + 1] - xs[i])
        return float(ys[i] + frac * (ys[i + 1] - ys[i]))

    @property
    def start(self) -> float:
        return float(self.points[0][1])

    def to_toml(self) -> Any:
        if len(self.points) == 1:
            return self.points[0][1]
        return {"points": self.points, "interp": self.interp, "unit": self.unit}
