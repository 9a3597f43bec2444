"""Checkpoint store: round trips, atomic publish, corruption fallback, kill -9, prune, disk errors."""

from __future__ import annotations

import errno
import os
import random
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from fivectl.errors import BadInput, FivectlError, RunFailed
from fivectl.store import checkpoint as ck
from fivectl.store.checkpoint import CheckpointFallbackWarning, CheckpointStore


def arrays_for(version: int) -> dict[str, dict[str, np.ndarray]]:
    return {
        "model": {
            "enc.weight": np.full((4, 3), version, np.float32),
            "enc.bias": np.arange(3, dtype=np.float64) + version,
        },
        "counters": {"steps": np.array(version, np.int64), "flags": np.array([True, False, True])},
        "empty": {"none": np.zeros((0, 5), np.float32)},
    }


def save(store: CheckpointStore, version: int) -> None:
    store.save(version, arrays_for(version), {"iteration": version, "nested": {"t": (1, 2)}})


def assert_is_version(ckpt: ck.Checkpoint, version: int) -> None:
    want = arrays_for(version)
    assert ckpt.version == version
    assert ckpt.attrs == {"iteration": version, "nested": {"t": [1, 2]}}
    for section, named in want.items():
        assert set(ckpt.arrays[section]) == set(named)
        for name, a in named.items():
            got = ckpt.arrays[section][name]
            assert got.dtype == a.dtype and got.shape == a.shape
            np.testing.assert_array_equal(got, a)


def test_save_load_round_trip_and_listing(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "c.zarr")
    assert store.versions() == [] and store.latest() is None
    for v in (10, 20, 30):
        save(store, v)
    assert store.versions() == [10, 20, 30]
    assert store.latest() == 30 and store.pointer()["version"] == 30
    assert_is_version(store.load(), 30)
    assert_is_version(store.load(20), 20)
    assert store.load_attrs(10)["iteration"] == 10
    with pytest.raises(BadInput, match="no checkpoint version 15"):
        store.load(15)


def test_the_store_is_a_valid_zarr_hierarchy_with_arrays_packed_per_section_and_dtype(tmp_path: Path) -> None:
    import zarr

    store = CheckpointStore(tmp_path / "c.zarr")
    save(store, 1)
    root = zarr.open_group(store.path, mode="r")
    assert "v00000001" in set(root.group_keys())
    # model: float32 + float64; counters: int64 + bool; empty: float32 -> five zarr arrays, not seven
    stored = {f"{s}/{a}" for s in ("model", "counters", "empty") for a in root[f"v00000001/{s}"].array_keys()}
    assert len(stored) == 5 and all(k.split("/")[1].startswith("__pack") for k in stored)
    # any zarr reader finds a named array through the manifest
    entry = root["v00000001"].attrs["fivectl_checkpoint"]["manifest"]["model/enc.weight"]
    pack = root[f"v00000001/model/{entry['pack']}"][...]
    got = pack[entry["offset"] : entry["offset"] + 12].reshape(entry["shape"])
    np.testing.assert_array_equal(got, np.full((4, 3), 1, np.float32))


def test_groups_written_one_array_per_name_still_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unpacked(arrays):  # the format before packing: no "pack" in the manifest
        manifest = {
            f"{s}/{n}": {"shape": list(a.shape), "dtype": a.dtype.str, "digest": ck.array_digest(a)}
            for s, named in arrays.items()
            for n, a in named.items()
        }
        return arrays, manifest

    store = CheckpointStore(tmp_path / "c.zarr")
    monkeypatch.setattr(ck, "_pack_sections", unpacked)
    save(store, 1)
    monkeypatch.undo()
    assert (store.path / "v00000001" / "model" / "enc.weight" / "zarr.json").exists()
    save(store, 2)
    assert_is_version(store.load(1), 1)
    assert_is_version(store.load(2), 2)


def test_loading_some_sections_reads_only_those(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "c.zarr")
    save(store, 1)
    os.truncate(chunk_file(store, 1, "counters", "steps"), 1)  # damage a section the caller does not want
    ckpt = store.load(1, sections=("model",))
    assert set(ckpt.arrays) == {"model"}
    np.testing.assert_array_equal(ckpt.arrays["model"]["enc.bias"], np.arange(3) + 1.0)
    with pytest.raises(FivectlError, match="v1 is corrupt"):
        store.load(1)


def test_load_without_checkpoint_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no checkpoint has been published"):
        CheckpointStore(tmp_path / "c.zarr").load()


def test_crash_between_staging_and_rename_keeps_previous(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CheckpointStore(tmp_path / "c.zarr")
    save(store, 1)

    def crash(self: CheckpointStore, stage: Path, version: int) -> None:
        raise KeyboardInterrupt  # a signal in the worst place: after staging, before the rename

    monkeypatch.setattr(CheckpointStore, "_publish", crash)
    with pytest.raises(KeyboardInterrupt):
        save(store, 2)
    monkeypatch.undo()
    assert store.versions() == [1]
    assert_is_version(store.load(), 1)
    assert store.delete_staging() == 1
    assert [p.name for p in (store.path / ".staging").iterdir()] == ["zarr.json"]
    save(store, 2)
    assert_is_version(store.load(), 2)


def test_crash_before_pointer_update_still_loads_the_renamed_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CheckpointStore(tmp_path / "c.zarr")
    save(store, 1)
    monkeypatch.setattr(
        CheckpointStore, "_write_pointer", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt)
    )
    with pytest.raises(KeyboardInterrupt):
        save(store, 2)
    monkeypatch.undo()
    assert store.pointer()["version"] == 1
    assert_is_version(store.load(), 2)  # complete and fsynced before the rename: it is published


def chunk_file(store: CheckpointStore, version: int, section: str, name: str) -> Path:
    """The file holding array ``section/name`` (its section's pack for that dtype)."""
    manifest = ck._read_group_attrs(store.path / f"v{version:08d}")["fivectl_checkpoint"]["manifest"]
    pack = manifest[f"{section}/{name}"]["pack"]
    files = [p for p in (store.path / f"v{version:08d}" / section / pack / "c").rglob("*") if p.is_file()]
    assert len(files) == 1
    return files[0]


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete", "attrs"])
def test_corrupt_latest_falls_back_with_a_warning(tmp_path: Path, damage: str) -> None:
    store = CheckpointStore(tmp_path / "c.zarr")
    save(store, 1)
    save(store, 2)
    chunk = chunk_file(store, 2, "model", "enc.weight")
    if damage == "truncate":
        os.truncate(chunk, chunk.stat().st_size // 2)
    elif damage == "flip":
        data = bytearray(chunk.read_bytes())
        data[-3] ^= 0xFF
        chunk.write_bytes(bytes(data))
    elif damage == "delete":
        chunk.unlink()
    else:
        meta = store.path / "v00000002" / "zarr.json"
        meta.write_text(meta.read_text().replace('"iteration": 2', '"iteration": 7'))
    with pytest.warns(CheckpointFallbackWarning, match="v2"):
        ckpt = store.load()
    assert_is_version(ckpt, 1)
    assert ckpt.fell_back and ckpt.skipped[0][0] == 2
    with pytest.raises(FivectlError, match="v2 is corrupt"):
        store.load(2)


def test_truncated_group_metadata_falls_back(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "c.zarr")
    save(store, 1)
    save(store, 2)
    meta = store.path / "v00000002" / "zarr.json"
    os.truncate(meta, 10)
    with pytest.warns(CheckpointFallbackWarning):
        assert store.load().version == 1
    assert store.discard_after(1) == [2]
    assert store.versions() == [1] and store.pointer()["version"] == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_is_version(store.load(), 1)


def test_every_version_corrupt_is_an_error(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "c.zarr")
    save(store, 1)
    os.truncate(store.path / "v00000001" / "zarr.json", 3)
    with pytest.raises(FivectlError, match="every checkpoint is corrupt"):
        store.load()


def test_resaving_an_existing_version_replaces_it(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "c.zarr")
    save(store, 3)
    store.save(3, arrays_for(4), {"iteration": 3, "nested": {"t": [1, 2]}})
    ckpt = store.load()
    assert ckpt.version == 3
    np.testing.assert_array_equal(ckpt.arrays["model"]["enc.weight"], np.full((4, 3), 4, np.float32))


def test_prune_keeps_last_k_and_milestones(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "c.zarr")
    for v in range(10, 130, 10):
        store.save(v, {"m": {"x": np.array([v])}}, {})
    deleted = store.prune(keep_last=3, milestone_every=50)
    assert store.versions() == [50, 100, 110, 120]
    assert deleted == [10, 20, 30, 40, 60, 70, 80, 90]
    assert store.prune(keep_last=1) == [50, 100, 110]
    assert store.versions() == [120] and store.load().version == 120
    assert [i.milestone for i in store.info(milestone_every=40)] == [True]


def section_dirs(store: CheckpointStore, version: int) -> set[str]:
    vdir = store.path / ck.version_dirname(version)
    return {p.name for p in vdir.iterdir() if p.is_dir()}


def test_slim_keeps_the_model_loadable_and_refuses_a_full_load(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "c.zarr")
    for v in (10, 20, 30):
        save(store, v)
    before = store.info()[0].bytes
    assert store.slim(10) is True
    assert section_dirs(store, 10) == {"model"}
    assert store.info()[0].bytes < before
    assert [i.slim for i in store.info()] == [True, False, False]
    model = store.load(10, sections=("model",))
    assert_same_section(model, 10, "model")
    assert store.load_attrs(10)["iteration"] == 10
    with pytest.raises(BadInput, match=r"v10 keeps only its model section.*counters, empty were dropped"):
        store.load(10)
    with pytest.raises(BadInput, match="counters"):
        store.load(10, sections=("model", "counters"))
    assert store.slim(10) is False  # already slim: nothing left to remove
    with pytest.raises(BadInput, match="latest checkpoint"):
        store.slim(30)


def assert_same_section(ckpt: ck.Checkpoint, version: int, section: str) -> None:
    for name, a in arrays_for(version)[section].items():
        np.testing.assert_array_equal(ckpt.arrays[section][name], a)


def test_the_newest_good_search_skips_slimmed_versions(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "c.zarr")
    for v in (10, 20, 30):
        save(store, v)
    store.slim(20)
    (store.path / "v00000030" / "model" / "__pack0" / "zarr.json").write_text("{")
    with pytest.warns(CheckpointFallbackWarning, match="v20 .keeps only its model section"):
        ckpt = store.load()
    assert_is_version(ckpt, 10)


def test_slim_old_spares_the_window_and_milestones_and_finishes_a_killed_slim(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "c.zarr")
    for v in range(10, 90, 10):
        save(store, v)
    assert store.slim_old(keep_last=3, milestone_every=40) == [10, 20, 30, 50]
    full = {"model", "counters", "empty"}
    assert {v: section_dirs(store, v) == full for v in store.versions()} == {
        10: False,
        20: False,
        30: False,
        40: True,
        50: False,
        60: True,
        70: True,
        80: True,
    }
    assert store.slim_old(keep_last=3, milestone_every=40) == []
    # A kill after the manifest was rewritten but before the files went: a fresh store object finishes it.
    save(store, 90)
    meta_path = store.path / "v00000060" / "zarr.json"
    kept = (store.path / "v00000060" / "counters").rename(tmp_path / "counters-60")
    CheckpointStore(store.path).slim(60)
    kept.rename(store.path / "v00000060" / "counters")
    assert "dropped_sections" in meta_path.read_text()
    assert CheckpointStore(store.path).slim_old(keep_last=3, milestone_every=40) == [60]
    assert section_dirs(store, 60) == {"model"}
    assert_same_section(store.load(60, sections=("model",)), 60, "model")


def test_bad_arguments_are_rejected(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "c.zarr")
    with pytest.raises(BadInput, match="NaN"):
        store.save(1, {}, {"x": float("nan")})
    with pytest.raises(BadInput, match="bad checkpoint array name"):
        store.save(1, {"m": {"a/b": np.zeros(1)}}, {})
    with pytest.raises(BadInput, match="reserved"):
        store.save(1, {}, {"fivectl_checkpoint": 1})
    assert store.versions() == []


def test_disk_full_is_a_clear_error_and_keeps_the_previous(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CheckpointStore(tmp_path / "c.zarr")
    save(store, 1)

    def no_space(path: Path) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(ck, "fsync_tree", no_space)
    with pytest.raises(RunFailed, match="cannot write checkpoint v2 .*No space left on device"):
        save(store, 2)
    monkeypatch.undo()
    assert store.versions() == [1]
    assert store.delete_staging() == 0  # the failed stage was cleaned up
    assert_is_version(store.load(), 1)


READ_ONLY_SAVE = """
import os, sys
import numpy as np
from fivectl.errors import RunFailed
from fivectl.store.checkpoint import CheckpointStore
if os.geteuid() == 0:
    # root ignores permissions: drop to nobody so the directory really is read-only, after a save elsewhere has
    # imported every module (nobody may not be able to read the interpreter's install)
    CheckpointStore(sys.argv[2]).save(1, {"m": {"x": np.zeros(3)}}, {})
    os.setuid(65534)
try:
    CheckpointStore(sys.argv[1]).save(2, {"m": {"x": np.zeros(3)}}, {})
except RunFailed as e:
    print(e)
    sys.exit(3)
"""


def test_read_only_directory_is_a_clear_error_and_keeps_the_previous(tmp_path: Path) -> None:
    root = Path(os.environ.get("TMPDIR", "/tmp")) / f"fivectl-ro-{os.getpid()}-{random.randrange(1 << 30)}"
    root.mkdir()
    try:
        store = CheckpointStore(root / "c.zarr")
        store.save(1, {"m": {"x": np.ones(3)}}, {})
        for d in (root, store.path, store.path / ".staging"):
            d.chmod(0o555)
        proc = subprocess.run(
            [sys.executable, "-c", READ_ONLY_SAVE, str(store.path), str(tmp_path / "warm.zarr")],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 3, proc.stderr
        assert "cannot write checkpoint v2" in proc.stdout and "Permission denied" in proc.stdout
        assert len(proc.stdout.strip().splitlines()) == 1
        assert store.versions() == [1]
        np.testing.assert_array_equal(store.load().arrays["m"]["x"], np.ones(3))
    finally:
        for d in (root, root / "c.zarr", root / "c.zarr" / ".staging"):
            if d.exists():
                d.chmod(0o755)
        import shutil

        shutil.rmtree(root, ignore_errors=True)


SAVE_LOOP = """
import sys
import numpy as np
from fivectl.store.checkpoint import CheckpointStore
store = CheckpointStore(sys.argv[1])
v = 0
while True:
    v += 1
    arrays = {"model": {f"w{i}": np.full((64, 64), v, np.float32) for i in range(8)}, "rng": {"s": np.array([v])}}
    store.save(v, arrays, {"iteration": v})
    store.prune(keep_last=2, milestone_every=5)
    print(v, flush=True)
"""


def test_kill_9_while_saving_leaves_a_loadable_store(tmp_path: Path) -> None:
    rng = random.Random(1234)
    for trial in range(3):
        path = tmp_path / f"c{trial}.zarr"
        proc = subprocess.Popen(
            [sys.executable, "-c", SAVE_LOOP, str(path)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        proc.stdout.readline()  # at least one version is published
        time.sleep(rng.uniform(0.0, 0.4))
        proc.kill()
        proc.wait()
        store = CheckpointStore(path)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a killed save never leaves a corrupt published version
            ckpt = store.load()
        v = ckpt.version
        assert ckpt.attrs == {"iteration": v}
        assert all((a == v).all() for a in ckpt.arrays["model"].values())
        store.delete_staging()
        assert not [p for p in (path / ".staging").iterdir() if p.name != "zarr.json"]
        store.save(v + 1, ckpt.arrays, {"iteration": v + 1})
        assert store.load().version == v + 1


# -- torch state dicts and RNG ------------------------------------------------------------------------------
