"""Making written files durable: fsync of a file tree or a directory, with one ``syncfs`` where Linux has it.

A crash-safe write is "stage, make durable, then rename": these are the "make durable" half, shared by the atomic
file writes (``store.atomic``), the checkpoint store and the rollout writer.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from pathlib import Path
from typing import Any


def fsync_dir(path: Path) -> None:
    """fsync a directory so a rename or a new entry in it survives a crash (best effort: some filesystems
    cannot open or fsync a directory)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def fsync_tree(root: Path) -> None:
    """Make every file under ``root`` durable: one ``syncfs`` of its filesystem on Linux (hundreds of per-file
    fsyncs cost seconds), else an fsync per file and directory."""
    if _syncfs(root):
        return
    for dirpath, _dirnames, filenames in os.walk(root):
        for fn in filenames:
            fd = os.open(os.path.join(dirpath, fn), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(Path(dirpath))


def _syncfs(path: Path) -> bool:
    libc = _libc()
    if libc is None:
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.syncfs(fd) != 0:
            err = ctypes.get_errno()
            # a writeback error: the data did not reach the disk
            raise OSError(err, os.strerror(err), str(path))
    finally:
        os.close(fd)
    return True


@functools.cache
def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc if hasattr(libc, "syncfs") else None
    except OSError:
        return None


__all__ = ["fsync_dir", "fsync_tree"]
