"""Reading replays with the checks of this fivectl: replay format version and observation schema."""

from __future__ import annotations

from pathlib import Path

from fivectl.schema import available_versions
from fivectl.store.replay import Replay, read_replay, read_replay_info


def readable_schemas() -> tuple[int, ...]:
    return tuple(available_versions())


def load_replay(path: str | Path) -> Replay:
    """A whole replay; BadInput for a truncated or corrupt file, or one of another format or schema version."""
    return read_replay(path, readable_schemas())


def replay_info(path: str | Path) -> tuple[dict, dict]:
    """(header, result) of a replay without reading its rows."""
    return read_replay_info(path, readable_schemas())
