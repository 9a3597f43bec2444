"""Self-play: the pool of past opponents (paper appendix N)."""

from fivectl.selfplay.pool import OpponentPool

__all__ = ["OpponentPool"]
