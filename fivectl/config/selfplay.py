"""``[selfplay]``: the opponent pool (paper appendix N)."""

from __future__ import annotations

from dataclasses import dataclass

from fivectl.config.fields import param


@dataclass
class SelfPlayConfig:
    latest_fraction: float = param(
        0.8, "Fraction of games against the latest parameters (paper: 0.8).", ge=0, le=1
    )
    add_every: int = param(10, "Iterations between adding the current version to the pool (paper: 10).", ge=1)
    eta: float = param(
        0.01, "Quality learning rate: q_i -= eta / (N p_i) when the agent beats opponent i.", gt=0
    )
    max_pool: int = param(0, "Largest pool size (oldest dropped); 0 = unbounded.", ge=0)
