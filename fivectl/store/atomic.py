"""Crash-safe file writes: stage in the same directory, fsync, then ``os.replace``."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from fivectl.store.fsync import fsync_dir


def write_bytes_atomic(path: str | Path, data: bytes, make_parent: bool = True) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old file or the new one, never a part. With
    ``make_parent=False`` a missing directory is a ``FileNotFoundError`` instead of being created."""
    path = Path(path)
    if make_parent:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(path.parent)


def write_text_atomic(path: str | Path, text: str, make_parent: bool = True) -> None:
    write_bytes_atomic(path, text.encode(), make_parent)


def write_json_atomic(path: str | Path, obj: Any, make_parent: bool = True) -> None:
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True) + "\n", make_parent)
