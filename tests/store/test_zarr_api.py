"""The store uses zarr's public API only, and its async I/O runs from any caller: plain code, code inside a running
event loop (an async Ray actor, a notebook), a forked child."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import re
from pathlib import Path

import numpy as np

from fivectl.store.checkpoint import CheckpointStore

PACKAGE = Path(__file__).resolve().parents[2] / "fivectl"


def test_no_private_zarr_api_is_imported():
    private = re.compile(r"^\s*(from|import)\s+zarr\.core\b", re.MULTILINE)
    used = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if private.search(p.read_text())]
    assert used == [], f"zarr.core is zarr's private API: {used}"


def roundtrip(path: Path, version: int) -> float:
    store = CheckpointStore(path)
    store.save(version, {"model": {"w": np.full((3, 2), version, np.float32)}}, {"v": version})
    return float(store.load(version).arrays["model"]["w"].sum())


def test_saves_and_loads_from_inside_a_running_event_loop(tmp_path):
    async def in_a_loop() -> float:
        return roundtrip(tmp_path / "ckpt", 2)

    assert asyncio.run(in_a_loop()) == 12.0


def test_a_forked_child_saves_after_its_parent_did(tmp_path):
    assert roundtrip(tmp_path / "ckpt", 1) == 6.0  # starts the I/O loop in this process
    child = mp.get_context("fork").Process(target=roundtrip, args=(tmp_path / "ckpt", 3))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    assert CheckpointStore(tmp_path / "ckpt").versions() == [1, 3]
