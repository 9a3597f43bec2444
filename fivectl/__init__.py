"""fivectl: the lifecycle of a long-lived self-play RL experiment on a MOBA game."""

__version__ = "0.1.0"
