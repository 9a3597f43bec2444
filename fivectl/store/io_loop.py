"""One event loop on a background thread for the store's async I/O (zarr's async API).

Zarr runs its synchronous API the same way, but its runner is private API (``zarr.core``). A loop per call
(``asyncio.run``) would be public too, but builds a loop and a thread pool for every checkpoint save: this one
loop, and its thread pool, serve every call of the process.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()


def _io_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="fivectl-store-io", daemon=True).start()
            _loop = loop
        return _loop


def run_coroutine(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the store's loop and wait for its result (its exception is raised here)."""
    return asyncio.run_coroutine_threadsafe(coro, _io_loop()).result()


def _forget_loop_after_fork() -> None:
    # A forked child has the loop object but not the thread that runs it: the first call makes a new one.
    global _loop, _lock
    _loop = None
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_loop_after_fork)
