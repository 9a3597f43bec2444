"""Self-play: the pool of past opponents (paper appendix N)."""

from fivectl.selfplay.pool import LATEST, LATEST_ID, OpponentPool

__all__ = ["LATEST", "LATEST_ID", "OpponentPool"]
