"""Per-iteration training metrics as small Arrow IPC files, plus optional TensorBoard events.

Each ``append`` publishes one file ``{first:010d}-{last:010d}-{token}.arrow`` (its iteration range) atomically.
Every row has an ``iteration``; ``read`` concatenates the files (columns unified, missing values null), keeps one
row per iteration and sorts by it. Rows are never edited in place: ``truncate_after`` and ``compact`` write the new
file before removing the old ones, so a crash in between leaves identical duplicate rows, which ``read`` drops.
"""

from __future__ import annotations

import math
import re
import secrets
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fivectl.errors import BadInput, FivectlError, RunFailed
from fivectl.store.atomic import write_bytes_atomic

ITERATION = "iteration"
_NAME_RE = re.compile(r"^(\d{10})-(\d{10})-[0-9a-f]+\.arrow$")


class MetricsLog:
    """Metrics of one run in ``dir``. ``tensorboard_dir``: also write TensorBoard scalars there when the
    ``tensorboard`` package is importable (otherwise that part is a no-op)."""

    def __init__(self, dir: str | Path, tensorboard_dir: str | Path | None = None):
        self.dir = Path(dir)
        self._tb = _open_tensorboard(tensorboard_dir) if tensorboard_dir is not None else None

    @property
    def tensorboard_enabled(self) -> bool:
        return self._tb is not None

    # -- writing ------------------------------------------------------------------------------------
    def append(self, rows: list[dict[str, Any]]) -> Path | None:
        """Publish ``rows`` (each a flat dict with an int ``iteration``) as one new file; None if no rows."""
        if not rows:
            return None
        for row in rows:
            it = row.get(ITERATION)
            if not isinstance(it, int | np.integer) or isinstance(it, bool) or it < 0:
                raise BadInput(f"metrics row needs a non-negative int {ITERATION!r}, got {it!r}")
        try:
            table = pa.Table.from_pylist([{k: _plain(v) for k, v in row.items()} for row in rows])
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise BadInput(f"metrics rows are not a table of scalars: {e}") from None
        path = self._write(table)
        if self._tb is not None:
            _tensorboard_rows(self._tb, rows)
        return path

    def truncate_after(self, iteration: int) -> int:
        """Drop rows with ``iteration`` greater than the given one (resume from a checkpoint taken there), so the
        continued run neither repeats nor skips iterations. Returns how many rows were removed."""
        removed = 0
        for path, first, last in self._files():
            if last <= iteration:
                continue
            if first > iteration:
                removed += _num_rows(path)
                self._unlink(path)
                continue
            table = _read_file(path)
            keep = table.filter(pc.less_equal(table[ITERATION], iteration))
            removed += table.num_rows - keep.num_rows
            self._write(keep)
            self._unlink(path)
        return removed

    def compact(self) -> Path | None:
        """Merge every file into one (new file first, then the old ones removed)."""
        files = self._files()
        if len(files) < 2:
            return None
        merged = self._write(self.read())
        for path, _first, _last in files:
            if path != merged:
                self._unlink(path)
        return merged

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
            self._tb = None

    # -- reading ------------------------------------------------------------------------------------
    def read(self) -> pa.Table:
        """All rows, one per iteration (the last written wins), sorted by iteration. Empty table if none."""
        tables = [_read_file(path) for path, _f, _l in self._files()]
        if not tables:
            return pa.table({ITERATION: pa.array([], pa.int64())})
        table = pa.concat_tables(tables, promote_options="permissive")
        iterations = table[ITERATION].to_numpy()
        # keep the last occurrence of each iteration: unique over the reversed column gives first-from-the-end
        _, rev_idx = np.unique(iterations[::-1], return_index=True)
        keep = np.sort(len(iterations) - 1 - rev_idx)
        table = table.take(pa.array(keep))
        return table.sort_by(ITERATION)

    def last_iteration(self) -> int | None:
        files = self._files()
        return max(last for _p, _f, last in files) if files else None

    # -- files --------------------------------------------------------------------------------------
    def _files(self) -> list[tuple[Path, int, int]]:
        if not self.dir.is_dir():
            return []
        found = []
        for p in self.dir.iterdir():
            m = _NAME_RE.match(p.name)
            if m:
                found.append((p, int(m.group(1)), int(m.group(2))))
        return sorted(found, key=lambda f: (f[1], f[2], f[0].name))

    def _write(self, table: pa.Table) -> Path | None:
        if table.num_rows == 0:
            return None
        its = table[ITERATION]
        first, last = pc.min(its).as_py(), pc.max(its).as_py()
        path = self.dir / f"{first:010d}-{last:010d}-{secrets.token_hex(4)}.arrow"
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        try:
            write_bytes_atomic(path, sink.getvalue().to_pybytes())
        except OSError as e:
            raise RunFailed(f"cannot write metrics to {self.dir}: {e.strerror or e}") from e
        return path

    def _unlink(self, path: Path) -> None:
        try:
            path.unlink(missing_ok=True)
        except OSError as e:
            raise RunFailed(f"cannot remove metrics file {path}: {e.strerror or e}") from e


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v.item()
    return v


def _read_file(path: Path) -> pa.Table:
    try:
        with pa.memory_map(str(path), "r") as source:
            return pa.ipc.open_file(source).read_all()
    except (pa.ArrowInvalid, OSError) as e:
        raise FivectlError(f"{path}: unreadable metrics file: {e}") from None


def _num_rows(path: Path) -> int:
    return _read_file(path).num_rows


def _open_tensorboard(logdir: str | Path) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter  # needs the optional ``tensorboard`` package
    except ImportError:
        return None
    return SummaryWriter(log_dir=str(logdir))


def _tensorboard_rows(writer: Any, rows: list[dict[str, Any]]) -> None:
    for row in rows:
        step = int(row[ITERATION])
        for key, value in row.items():
            v = _plain(value)
            if (
                key != ITERATION
                and isinstance(v, int | float)
                and not isinstance(v, bool)
                and math.isfinite(v)
            ):
                writer.add_scalar(key, v, step)
    writer.flush()


__all__ = ["ITERATION", "MetricsLog"]
