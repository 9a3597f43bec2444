"""``[eval]``: TrueSkill evaluation (paper appendix J)."""

from __future__ import annotations

from dataclasses import dataclass

from fivectl.config.fields import param


@dataclass
class EvalConfig:
    every_versions: int = param(
        0, "Evaluate during training every this many versions in a separate process; 0 = off.", ge=0
    )
    games: int = param(20, "Games per evaluated version.", ge=1)
    games_per_match: int = param(
        10,
        "Games per match: the games of a match run as one batch, and the opponent is redrawn (within the match "
        "window of the current rating) between matches. Larger is faster; 2 follows the rating most closely.",
        ge=1,
    )
    references: list[str] = param(
        factory=lambda: ["random", "bot:passive", "bot:easy", "bot:medium"],
        doc="Reference agents with fixed ratings.",
    )
    match_window: float = param(10.0, "A test agent only plays references within this many TrueSkill.", gt=0)
    draw_probability: float = param(0.02, "TrueSkill draw probability.", ge=0, lt=1)
