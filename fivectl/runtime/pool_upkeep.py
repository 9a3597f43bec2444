"""The learner's upkeep of the opponent pool (paper N): results against past versions, and new members.

Each ended game against a past version moves that version's quality score (it falls when the learner won, so the
version is drawn less often). Every ``selfplay.add_every`` versions the current one joins the pool; the workers
load a member from its checkpoint, so it gets one. Games against scripted bots (``selfplay.bot_fraction``) are
kept for the ``bot_win_rate_recent`` metric, and per level when ``selfplay.bots`` mixes levels. The workers' side,
who plays each game, is ``opponents.py``.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from fivectl.runtime.checkpointing import Checkpointing
from fivectl.runtime.opponents import bot_level
from fivectl.runtime.run_state import LearnerState
from fivectl.selfplay.pool import LATEST

RECENT_BOT_GAMES = 200


class PoolUpkeep:
    def __init__(self, state: LearnerState, checkpoints: Checkpointing):
        self.state = state  # its counters are read anew each time: a restore replaces them
        self.checkpoints = checkpoints
        self.bot_results: deque[float] = deque(maxlen=RECENT_BOT_GAMES)  # 1 won, 0.5 draw, 0 lost
        self.bot_results_by_level: dict[str, deque[float]] = {}  # the same, each bot level's own window

    def record_results(self, fragments: list[dict[str, np.ndarray]]) -> None:
        """The games that ended in ``fragments``: against past versions into the pool, against bots kept."""
        for f in fragments:
            against_bot = (f["opponent"] < LATEST) & (f["game_seconds"] > 0)
            winner = f["winner"][against_bot]
            results = np.where(winner < 0, 0.5, winner == f["learner_side"][against_bot])
            self.bot_results.extend(results.tolist())
            bots = f["opponent"][against_bot]
            for code in np.unique(bots):
                level = self.bot_results_by_level.setdefault(
                    bot_level(int(code)), deque(maxlen=RECENT_BOT_GAMES)
                )
                level.extend(results[bots == code].tolist())
            ended = (f["opponent"] >= 0) & (f["game_seconds"] > 0)
            if ended.any():
                won = f["winner"][ended] == f["learner_side"][ended]
                self.state.pool.record_results(f["opponent"][ended], won)

    def grow(self) -> None:
        """Every ``selfplay.add_every`` versions the current one joins the pool, with a checkpoint to load."""
        version = self.state.counters.version
        if version > 0 and self.state.pool.maybe_add(version, version):
            self.checkpoints.save_if_new(" (joined the opponent pool)")
