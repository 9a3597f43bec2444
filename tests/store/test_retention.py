"""Background slimming of the opponent pool's checkpoints: it sweeps, skips versions pruned meanwhile, and
reports a failed sweep."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fivectl.errors import RunFailed
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.retention import PoolSlimmer


def store_with(path: Path, versions: range) -> CheckpointStore:
    store = CheckpointStore(path)
    for v in versions:
        store.save(v, {"model": {"w": np.full(4, v, np.float32)}, "optimizer": {"m": np.ones(4)}}, {})
    return store


def test_the_slimmer_sweeps_everything_outside_the_window(tmp_path: Path) -> None:
    store = store_with(tmp_path / "c.zarr", range(10, 70, 10))
    slimmer = PoolSlimmer(store, keep_last=2, milestone_every=0)
    slimmer.kick()
    slimmer.kick()  # while the first sweep runs this is skipped; once it is done, a new sweep finds nothing
    slimmer.close()
    assert slimmer.slimmed == 4
    assert [i.slim for i in store.info()] == [True, True, True, True, False, False]
    np.testing.assert_array_equal(store.load(20, sections=("model",)).arrays["model"]["w"], np.full(4, 20))


def test_a_version_pruned_meanwhile_is_skipped_not_recreated(tmp_path: Path) -> None:
    store = store_with(tmp_path / "c.zarr", range(10, 40, 10))
    store.prune(keep_last=1)
    assert store.slim(10) is False
    assert not (store.path / "v00000010").exists() and store.versions() == [30]


def test_a_failed_sweep_fails_the_next_kick(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = store_with(tmp_path / "c.zarr", range(10, 40, 10))

    def full_disk(*args: object) -> list[int]:
        raise RunFailed("cannot slim: No space left on device")

    monkeypatch.setattr(store, "slim_old", full_disk)
    slimmer = PoolSlimmer(store, keep_last=1, milestone_every=0)
    slimmer.kick()
    with pytest.raises(RunFailed, match="No space left"):
        slimmer.close()
