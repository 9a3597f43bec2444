"""``RUN`` and ``RUN@VERSION``: how commands that read a run's checkpoint name it (surgery, ``train --init-from``)."""

from __future__ import annotations

from pathlib import Path

from fivectl.errors import BadInput
from fivectl.store.checkpoint import CheckpointStore


def split_run_spec(spec: str) -> tuple[Path, str]:
    """``RUN`` -> (RUN, "latest"); ``RUN@VERSION`` / ``RUN@latest`` -> (RUN, VERSION)."""
    path, at, version = spec.rpartition("@")
    if at and path and (version == "latest" or version.lstrip("v").isdigit()):
        return Path(path), version
    return Path(spec), "latest"


def resolve_version(store: CheckpointStore, version: str, spec: str) -> int:
    """The checkpoint number ``version`` ("latest" or a number) names in ``store``; BadInput if it has none."""
    versions = store.versions()
    if not versions:
        raise BadInput(f"{spec}: the run has no checkpoints (train it first)")
    if version == "latest":
        return versions[-1]
    number = int(version.lstrip("v"))
    if number not in versions:
        raise BadInput(f"{spec}: no checkpoint v{number} (kept: {', '.join(map(str, versions[-10:]))})")
    return number
