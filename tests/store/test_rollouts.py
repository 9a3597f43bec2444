"""Rollout fragments: Arrow IPC round trip with shapes, schema metadata, rotation and crash leftovers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from fivectl.errors import BadInput
from fivectl.schema import load_schema
from fivectl.store.rollouts import (
    RolloutWriter,
    prune_rollouts,
    read_rollouts,
    read_schema_json,
    remove_partial_rollouts,
    rollout_files,
)


def fragment(seed: int, b: int = 3, t: int = 4) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "obs.hero.float": rng.standard_normal((b, t, 5, 7)).astype(np.float32),
        "action_mask": rng.random((b, t, 12)) < 0.5,
        "actions": rng.integers(0, 80, (b, t, 4)).astype(np.int32),
        "logprob": rng.standard_normal((b, t)).astype(np.float32),
        "lstm_h": rng.standard_normal((b, 16)).astype(np.float32),  # per-sequence: state at fragment start
        "version": np.full(b, seed, np.int64),
    }


def assert_same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert list(a) == list(b)
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
        np.testing.assert_array_equal(a[k], b[k])


def test_round_trip_with_shapes_dtypes_and_schema(tmp_path: Path) -> None:
    schema = load_schema(1)
    frags = [fragment(i) for i in range(5)]
    with RolloutWriter(tmp_path, schema, max_fragments=2) as w:
        for f in frags:
            w.write(f)
    files = rollout_files(tmp_path)
    assert [p.name for p in files] == [
        f"rollouts-{i:08d}.arrow" for i in range(3)
    ]  # rotated every 2 fragments
    got = list(read_rollouts(tmp_path))
    assert len(got) == 5
    for want, g in zip(frags, got, strict=True):
        assert g.schema_version == schema.version
        assert_same(want, g.arrays)
    assert json.loads(read_schema_json(files[0])) == json.loads(schema.to_json())
    with pa.memory_map(str(files[0])) as src:
        arrow_schema = pa.ipc.open_file(src).schema
    assert arrow_schema.metadata[b"fivectl.schema_version"] == str(schema.version).encode()
    field = arrow_schema.field("obs.hero.float")
    assert pa.types.is_fixed_size_list(field.type) and field.type.list_size == 4 * 5 * 7
    assert json.loads(field.metadata[b"fivectl.shape"]) == [4, 5, 7]


def test_rotation_by_size_and_a_new_file_per_layout(tmp_path: Path) -> None:
    schema = load_schema(1)
    w = RolloutWriter(tmp_path, schema, prefix="worker1", max_bytes=1)
    w.write(fragment(0))
    w.write(fragment(1, b=2, t=9))
    w.close()
    assert len(rollout_files(tmp_path)) == 2
    shapes = [g.arrays["logprob"].shape for g in read_rollouts(tmp_path)]
    assert shapes == [(3, 4), (2, 9)]
    with RolloutWriter(tmp_path, schema, prefix="worker1") as w2:  # numbering continues, nothing overwritten
        w2.write(fragment(2))
    assert rollout_files(tmp_path)[-1].name == "worker1-00000002.arrow"


def test_keep_bytes_deletes_the_oldest_files_and_keeps_the_newest(tmp_path: Path) -> None:
    schema = load_schema(1)
    with RolloutWriter(tmp_path, schema, prefix="v00000010", max_fragments=1) as w:
        for i in range(3):
            w.write(fragment(i))
    size = rollout_files(tmp_path)[0].stat().st_size
    with RolloutWriter(tmp_path, schema, prefix="v00000020", max_fragments=1, keep_bytes=2 * size) as w:
        for i in range(3, 6):
            w.write(fragment(i))
    assert [p.name for p in rollout_files(tmp_path)] == [
        "v00000020-00000001.arrow",
        "v00000020-00000002.arrow",
    ]
    assert [int(f.arrays["version"][0]) for f in read_rollouts(tmp_path)] == [4, 5]
    assert prune_rollouts(tmp_path, keep_bytes=1) == [tmp_path / "v00000020-00000001.arrow"]
    assert len(rollout_files(tmp_path)) == 1  # the newest file always stays


def test_unfinished_file_of_a_crashed_writer_is_ignored(tmp_path: Path) -> None:
    schema = load_schema(1)
    with RolloutWriter(tmp_path, schema) as w:
        w.write(fragment(0))
    crashed = RolloutWriter(tmp_path, schema)
    crashed.write(fragment(1))  # never closed: stays under its temporary name
    assert any(p.name.endswith(".arrow.tmp") for p in tmp_path.iterdir())
    got = list(read_rollouts(tmp_path))
    assert len(got) == 1
    assert_same(fragment(0), got[0].arrays)
    assert remove_partial_rollouts(tmp_path) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["rollouts-00000000.arrow"]


def test_fragments_must_share_their_first_dimension(tmp_path: Path) -> None:
    w = RolloutWriter(tmp_path, load_schema(1))
    with pytest.raises(BadInput, match="share their first dimension"):
        w.write({"a": np.zeros((3, 2)), "b": np.zeros((4, 2))})
    with pytest.raises(BadInput, match="empty"):
        w.write({})
