"""Rollout fragments as Arrow IPC files, kept for later inspection and re-evaluation.

A fragment is a dict of numpy arrays sharing their first dimension (e.g. ``[B, T, ...]`` sequences plus ``[B, H]``
LSTM start states, or ``[T, B, ...]``). Each fragment becomes one record batch with one row per index of that first
dimension; everything after it is flattened into a fixed-size list column whose field metadata holds the row shape
and numpy dtype, so ``read_rollouts`` restores the original shapes. Files are written under a temporary name,
fsynced and renamed when rotated (by size or fragment count) or closed: a crash leaves only a temporary file, which
readers ignore. The schema version and JSON are in the Arrow schema metadata.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from fivectl import __version__
from fivectl.errors import BadInput, FivectlError, RunFailed
from fivectl.store.fsync import fsync_dir

SUFFIX = ".arrow"
TMP_SUFFIX = ".arrow.tmp"
META_SCHEMA_VERSION = b"fivectl.schema_version"
META_SCHEMA_JSON = b"fivectl.schema_json"
META_FIVECTL_VERSION = b"fivectl.version"
META_SHAPE = b"fivectl.shape"
META_DTYPE = b"fivectl.dtype"


@dataclass
class Fragment:
    arrays: dict[str, np.ndarray]
    schema_version: int
    file: Path


class RolloutWriter:
    """Append fragments to ``dir/{prefix}-{seq:08d}.arrow``, rotating after ``max_bytes`` or ``max_fragments``.

    With ``keep_bytes`` > 0, each rotation deletes the directory's oldest files (by name) until the published
    ones fit in it: a weeks-long run keeps its recent rollouts instead of filling the disk.

    ``schema``: the ``ObsSchema`` the observations were encoded with (anything with ``version`` and
    ``to_json()``). Give each concurrent writer its own ``prefix``. Use as a context manager or call ``close()``.
    """

    def __init__(
        self,
        dir: str | Path,
        schema: Any,
        prefix: str = "rollouts",
        max_bytes: int = 64 << 20,
        max_fragments: int = 1000,
        keep_bytes: int = 0,
    ):
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", prefix):
            raise BadInput(f"rollout file prefix {prefix!r}: use letters, digits, '_', '.', '-'")
        self.dir = Path(dir)
        self.prefix = prefix
        self.max_bytes = max_bytes
        self.max_fragments = max_fragments
        self.keep_bytes = keep_bytes
        self.schema_version = int(schema.version)
        self.schema_json = schema.to_json()
        self._seq = _next_seq(self.dir, prefix)
        self._sink: pa.OSFile | None = None
        self._writer: pa.ipc.RecordBatchFileWriter | None = None
        self._tmp: Path | None = None
        self._batch_schema: pa.Schema | None = None  # the layout of the open file (field metadata = shapes)
        self._fragments = 0
        self.files: list[Path] = []  # published so far

    def write(self, fragment: dict[str, np.ndarray]) -> None:
        batch = fragment_to_batch(fragment)
        try:
            if self._writer is not None and not batch.schema.equals(self._batch_schema, check_metadata=True):
                self._publish()  # another layout starts a new file: one Arrow schema per file
            if self._writer is None:
                self._open(batch.schema)
            self._writer.write_batch(batch)
            self._fragments += 1
            if self._fragments >= self.max_fragments or self._sink.tell() >= self.max_bytes:
                self._publish()
        except OSError as e:
            raise RunFailed(f"cannot write rollouts to {self.dir}: {e.strerror or e}") from e

    def close(self) -> None:
        if self._writer is not None:
            try:
                self._publish()
            except OSError as e:
                raise RunFailed(f"cannot write rollouts to {self.dir}: {e.strerror or e}") from e

    def __enter__(self) -> RolloutWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self, batch_schema: pa.Schema) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self._batch_schema = batch_schema
        arrow_schema = batch_schema.with_metadata(
            {
                META_SCHEMA_VERSION: str(self.schema_version).encode(),
                META_SCHEMA_JSON: self.schema_json.encode(),
                META_FIVECTL_VERSION: __version__.encode(),
            }
        )
        name = f"{self.prefix}-{self._seq:08d}"
        self._tmp = self.dir / f".{name}.{secrets.token_hex(4)}{TMP_SUFFIX}"
        self._sink = pa.OSFile(str(self._tmp), "wb")
        self._writer = pa.ipc.new_file(self._sink, arrow_schema)
        self._fragments = 0

    def _publish(self) -> None:
        assert self._writer is not None and self._sink is not None and self._tmp is not None
        self._writer.close()
        self._sink.close()
        fd = os.open(self._tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        final = self.dir / f"{self.prefix}-{self._seq:08d}{SUFFIX}"
        os.replace(self._tmp, final)
        fsync_dir(self.dir)
        self.files.append(final)
        self._seq += 1
        self._writer = self._sink = self._tmp = None
        if self.keep_bytes:
            prune_rollouts(self.dir, self.keep_bytes)


def fragment_to_batch(fragment: dict[str, np.ndarray]) -> pa.RecordBatch:
    """One record batch, a row per index of the shared first dimension, trailing dims as fixed-size lists."""
    if not fragment:
        raise BadInput("empty rollout fragment")
    arrays = {k: np.asarray(v) for k, v in fragment.items()}
    rows = {k: (a.shape[0] if a.ndim else None) for k, a in arrays.items()}
    if None in rows.values() or len(set(rows.values())) != 1:
        raise BadInput(f"rollout fragment arrays must share their first dimension, got {rows}")
    n_rows = next(iter(rows.values()))
    fields, columns = [], []
    for key, a in arrays.items():
        if a.dtype.kind not in "biuf":
            raise BadInput(f"rollout array {key!r}: dtype {a.dtype} is not numeric or bool")
        row_shape = a.shape[1:]
        width = math.prod(row_shape)
        flat = np.ascontiguousarray(a).reshape(n_rows * width)
        values = pa.array(flat)
        column = pa.FixedSizeListArray.from_arrays(values, width) if row_shape else values
        meta = {META_SHAPE: json.dumps(list(row_shape)).encode(), META_DTYPE: a.dtype.str.encode()}
        fields.append(pa.field(key, column.type, nullable=False, metadata=meta))
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))


def batch_to_fragment(batch: pa.RecordBatch) -> dict[str, np.ndarray]:
    out = {}
    for f, column in zip(batch.schema, batch.columns, strict=True):
        meta = f.metadata or {}
        if META_SHAPE not in meta:
            raise FivectlError(f"rollout column {f.name!r} has no shape metadata")
        row_shape = tuple(json.loads(meta[META_SHAPE]))
        dtype = np.dtype(meta[META_DTYPE].decode())
        values = column.flatten() if row_shape else column
        flat = values.to_numpy(zero_copy_only=False)
        out[f.name] = np.asarray(flat, dtype=dtype).reshape((len(batch), *row_shape))
    return out


def rollout_files(dir: str | Path) -> list[Path]:
    """Published rollout files, by name (prefix, then sequence); temporary files of a crashed writer excluded."""
    d = Path(dir)
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir() if p.name.endswith(SUFFIX) and not p.name.startswith("."))


def prune_rollouts(dir: str | Path, keep_bytes: int) -> list[Path]:
    """Delete the oldest published rollout files until the rest fit in ``keep_bytes``; the newest file always
    stays. Each file goes whole (one unlink), so readers see complete files only. Returns the deleted paths."""
    files = rollout_files(dir)
    sizes = [p.stat().st_size for p in files]
    total = sum(sizes)
    removed = []
    for path, size in zip(files[:-1], sizes[:-1], strict=True):
        if total <= keep_bytes:
            break
        path.unlink(missing_ok=True)
        total -= size
        removed.append(path)
    if removed:
        fsync_dir(Path(dir))
    return removed


def remove_partial_rollouts(dir: str | Path) -> int:
    """Delete the temporary files of writers that crashed (call when no writer is running). Returns the count."""
    d = Path(dir)
    partial = [p for p in d.iterdir() if p.name.endswith(TMP_SUFFIX)] if d.is_dir() else []
    for p in partial:
        p.unlink(missing_ok=True)
    return len(partial)


def read_rollouts(dir: str | Path) -> Iterator[Fragment]:
    """Every fragment in ``dir`` in write order, with its arrays in their original shapes and schema version."""
    for path in rollout_files(dir):
        yield from read_rollout_file(path)


def read_rollout_file(path: str | Path) -> Iterator[Fragment]:
    path = Path(path)
    try:
        with pa.memory_map(str(path), "r") as source:
            reader = pa.ipc.open_file(source)
            version = schema_version_of(reader.schema, path)
            for i in range(reader.num_record_batches):
                yield Fragment(batch_to_fragment(reader.get_batch(i)), version, path)
    except pa.ArrowInvalid as e:
        raise FivectlError(f"{path}: not a readable rollout file: {e}") from None


def schema_version_of(schema: pa.Schema, path: Path) -> int:
    meta = schema.metadata or {}
    if META_SCHEMA_VERSION not in meta:
        raise FivectlError(f"{path}: no observation schema version in the Arrow metadata")
    return int(meta[META_SCHEMA_VERSION])


def read_schema_json(path: str | Path) -> str:
    """The observation schema JSON recorded in one rollout file."""
    with pa.memory_map(str(path), "r") as source:
        meta = pa.ipc.open_file(source).schema.metadata or {}
    return meta.get(META_SCHEMA_JSON, b"").decode()


def _next_seq(dir: Path, prefix: str) -> int:
    pattern = re.compile(rf"^{re.escape(prefix)}-(\d{{8}}){re.escape(SUFFIX)}$")
    seqs = [int(m.group(1)) for p in rollout_files(dir) if (m := pattern.match(p.name))]
    return max(seqs) + 1 if seqs else 0


__all__ = [
    "Fragment",
    "RolloutWriter",
    "batch_to_fragment",
    "fragment_to_batch",
    "prune_rollouts",
    "read_rollout_file",
    "read_rollouts",
    "read_schema_json",
    "remove_partial_rollouts",
    "rollout_files",
]
