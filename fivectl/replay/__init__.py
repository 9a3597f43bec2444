"""``fivectl replay``: recorded games (``fivectl.store.replay``) listed, re-simulated, summarized and watched in
the terminal or in a self-contained HTML page (docs/ARCHITECTURE.md, Replays)."""

from fivectl.replay.load import load_replay, replay_info

__all__ = ["load_replay", "replay_info"]
