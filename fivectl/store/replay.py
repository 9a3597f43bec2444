"""Replay files: one game per Arrow IPC file (zstd), written step by step, read by ``fivectl replay``.

Each row is one decision step of the game: the world state at that step, the action each hero then took and what
each policy predicted there (NaN for scripted agents). The last row is the game's final frame (its action columns
hold ``NO_ACTION``), so a game of n steps has n + 1 rows.

Columns (``U`` unit slots, ``H`` heroes, ``K`` = ``len(objectives)``; ``[n]`` is a fixed-size list):

- ``tick`` int32: the game tick of the row (``tick / fps`` is the game time);
- per unit ``[U]``: ``utype`` int8 (``sim.data.UT_*``, 0 an empty slot), ``team`` int8 (2 neutral), ``alive`` int8,
  ``x``, ``y``, ``hp``, ``max_hp`` float32, ``level`` int8 (heroes; 0 for other units), ``target`` int16 (unit
  attacked, -1 none);
- per hero ``[H]``: ``gold``, ``networth`` float32, ``kills``, ``deaths``, ``last_hits``, ``denies`` int16;
- decisions: ``action`` int32 ``[H * 4]`` (primary, delay, target slot, offset as the hero's agent gave them to
  the game, in its own frame), ``value`` and ``win_prob`` float32 ``[H]``, ``objectives`` float32 ``[H * K]``.

Metadata: the schema metadata holds the header (JSON: format and version, agents, lineup, game config, seed and
the game's random start state, ...); the last record batch's custom metadata holds the result (JSON: winner,
steps, seconds, team stats). A file is written under a ``.partial`` name and renamed once the game has ended, so a
crash leaves no half replay under a replay's name.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from fivectl.errors import BadInput
from fivectl.store.atomic import fsync_dir

FORMAT = "fivectl-replay"
FORMAT_VERSION = 1
SUFFIX = ".arrow"
PARTIAL_SUFFIX = ".partial"
HEADER_KEY = b"fivectl.replay"
RESULT_KEY = b"fivectl.result"
NO_ACTION = -2
"""``action`` of the final frame: no decision follows it (``HOLD`` = -1 is a held order)."""

UNIT_COLUMNS: dict[str, Any] = {
    "utype": np.int8,
    "team": np.int8,
    "alive": np.int8,
    "x": np.float32,
    "y": np.float32,
    "hp": np.float32,
    "max_hp": np.float32,
    "level": np.int8,
    "target": np.int16,
}
HERO_COLUMNS: dict[str, Any] = {
    "gold": np.float32,
    "networth": np.float32,
    "kills": np.int16,
    "deaths": np.int16,
    "last_hits": np.int16,
    "denies": np.int16,
}
STATE_COLUMNS = ("tick", *UNIT_COLUMNS, *HERO_COLUMNS)
"""What the game decides (and ``replay verify`` re-simulates); the other columns are the agents'."""
PREDICTION_COLUMNS = ("value", "win_prob", "objectives")


def row_shapes(n_units: int, n_heroes: int, n_objectives: int) -> dict[str, tuple[tuple[int, ...], Any]]:
    """Column -> (shape of one row, numpy dtype)."""
    shapes: dict[str, tuple[tuple[int, ...], Any]] = {"tick": ((), np.int32)}
    shapes.update({name: ((n_units,), dtype) for name, dtype in UNIT_COLUMNS.items()})
    shapes.update({name: ((n_heroes,), dtype) for name, dtype in HERO_COLUMNS.items()})
    shapes["action"] = ((n_heroes, 4), np.int32)
    shapes["value"] = ((n_heroes,), np.float32)
    shapes["win_prob"] = ((n_heroes,), np.float32)
    shapes["objectives"] = ((n_heroes, n_objectives), np.float32)
    return shapes


def arrow_schema(shapes: dict[str, tuple[tuple[int, ...], Any]], header: dict) -> pa.Schema:
    fields = []
    for name, (shape, dtype) in shapes.items():
        value_type = pa.from_numpy_dtype(np.dtype(dtype))
        size = int(np.prod(shape)) if shape else 0
        fields.append(pa.field(name, pa.list_(value_type, size) if shape else value_type, nullable=False))
    return pa.schema(fields, metadata={HEADER_KEY: json.dumps(header).encode()})


def to_batch(schema: pa.Schema, shapes: dict, rows: dict[str, np.ndarray]) -> pa.RecordBatch:
    """A record batch from arrays [n, *row shape] (numpy, no per-row work)."""
    columns = []
    for name, (shape, dtype) in shapes.items():
        flat = np.ascontiguousarray(rows[name], dtype=dtype).reshape(-1)
        values = pa.array(flat)
        columns.append(pa.FixedSizeListArray.from_arrays(values, int(np.prod(shape))) if shape else values)
    return pa.RecordBatch.from_arrays(columns, schema=schema)


class ReplayWriter:
    """Writes one game to ``path``: the header first, then rows in chunks, then the result with the last rows.

    The file is ``path`` + ``.partial`` until :meth:`finish` renames it; :meth:`abandon` deletes it.
    """

    def __init__(self, path: Path, header: dict, n_units: int, n_heroes: int, n_objectives: int):
        self.path = Path(path)
        self.partial = self.path.with_name(self.path.name + PARTIAL_SUFFIX)
        self.shapes = row_shapes(n_units, n_heroes, n_objectives)
        header = {"format": FORMAT, "format_version": FORMAT_VERSION, **header}
        self.schema = arrow_schema(self.shapes, header)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._sink = pa.OSFile(str(self.partial), "wb")
        options = pa.ipc.IpcWriteOptions(compression="zstd")
        self._writer = pa.ipc.new_file(self._sink, self.schema, options=options)
        self.rows = 0

    def write(self, rows: dict[str, np.ndarray]) -> None:
        batch = to_batch(self.schema, self.shapes, rows)
        if batch.num_rows:
            self._writer.write_batch(batch)
            self.rows += batch.num_rows

    def finish(self, rows: dict[str, np.ndarray], result: dict) -> Path:
        """Write the last rows with the game's result, then publish the file under its name."""
        batch = to_batch(self.schema, self.shapes, rows)
        self._writer.write_batch(batch, custom_metadata={RESULT_KEY: json.dumps(result).encode()})
        self.rows += batch.num_rows
        self._writer.close()
        self._sink.flush()
        os.fsync(self._sink.fileno())
        self._sink.close()
        os.replace(self.partial, self.path)
        fsync_dir(self.path.parent)
        return self.path

    def abandon(self) -> None:
        """Close and delete the unfinished file (a game that was cut short)."""
        try:
            self._writer.close()
        except (pa.ArrowException, OSError):
            pass
        self._sink.close()
        self.partial.unlink(missing_ok=True)


@dataclass
class Replay:
    """A game read back: ``header`` and ``result`` dicts, ``arrays`` column -> [rows, *row shape]."""

    path: Path
    header: dict
    result: dict
    arrays: dict[str, np.ndarray]

    @property
    def rows(self) -> int:
        return int(self.arrays["tick"].shape[0])

    @property
    def steps(self) -> int:
        return self.rows - 1

    @property
    def fps(self) -> int:
        return int(self.header["game"]["fps"])

    def seconds(self) -> np.ndarray:
        """Game time of every row, in seconds."""
        return self.arrays["tick"] / float(self.fps)

    def row_at(self, seconds: float) -> int:
        """The last row at or before game time ``seconds`` (clamped to the game)."""
        return int(np.clip(np.searchsorted(self.seconds(), seconds, side="right") - 1, 0, self.rows - 1))


def _open_reader(path: Path) -> pa.ipc.RecordBatchFileReader:
    if not path.exists():
        raise BadInput(f"{path}: no such replay file")
    if path.is_dir():
        raise BadInput(f"{path}: is a directory, not a replay file")
    try:
        return pa.ipc.open_file(pa.memory_map(str(path), "r"))
    except (pa.ArrowException, OSError, ValueError) as e:
        raise BadInput(f"{path}: not a readable replay (truncated or corrupt: {first_line(e)})") from None


def first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def check_header(path: Path, header: dict, readable_schemas: tuple[int, ...] | None = None) -> None:
    """BadInput unless the header is a replay of this format version (and of a schema this fivectl reads)."""
    if header.get("format") != FORMAT:
        raise BadInput(f"{path}: not a fivectl replay (an Arrow file without a replay header)")
    version = header.get("format_version")
    if version != FORMAT_VERSION:
        raise BadInput(
            f"{path}: replay format v{version}; this fivectl reads replay format v{FORMAT_VERSION}"
        )
    schema = header.get("schema_version")
    if readable_schemas is not None and schema not in readable_schemas:
        shown = ", ".join(f"v{v}" for v in readable_schemas)
        raise BadInput(f"{path}: recorded with observation schema v{schema}; this fivectl reads {shown}")


def _header_of(path: Path, reader: pa.ipc.RecordBatchFileReader) -> dict:
    raw = (reader.schema.metadata or {}).get(HEADER_KEY)
    if raw is None:
        raise BadInput(f"{path}: not a fivectl replay (an Arrow file without a replay header)")
    try:
        return json.loads(raw)
    except ValueError:
        raise BadInput(f"{path}: corrupt replay header") from None


def _result_of(path: Path, reader: pa.ipc.RecordBatchFileReader) -> dict:
    if reader.num_record_batches == 0:
        raise BadInput(f"{path}: replay without rows (truncated)")
    try:
        _, meta = reader.get_batch_with_custom_metadata(reader.num_record_batches - 1)
        raw = (meta or {}).get(RESULT_KEY)
        if raw is None:
            raise BadInput(f"{path}: replay without a result (the game was not finished)")
        return json.loads(raw)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise BadInput(f"{path}: not a readable replay (truncated or corrupt: {first_line(e)})") from None


def read_replay_info(path: str | Path, readable_schemas: tuple[int, ...] | None = None) -> tuple[dict, dict]:
    """(header, result) of a replay without reading its rows (the last batch only)."""
    path = Path(path)
    reader = _open_reader(path)
    header = _header_of(path, reader)
    check_header(path, header, readable_schemas)
    return header, _result_of(path, reader)


def read_replay(path: str | Path, readable_schemas: tuple[int, ...] | None = None) -> Replay:
    """The whole game; BadInput for a file that is not a complete replay of this format version."""
    path = Path(path)
    reader = _open_reader(path)
    header = _header_of(path, reader)
    check_header(path, header, readable_schemas)
    result = _result_of(path, reader)
    try:
        table = reader.read_all()
        arrays = {name: _column(table.column(name)) for name in table.schema.names}
        shapes = row_shapes(int(header["units"]), int(header["heroes"]), len(header["objectives"]))
        arrays = {name: arrays[name].reshape(-1, *shape) for name, (shape, _) in shapes.items()}
    except (pa.ArrowException, OSError, ValueError, KeyError, TypeError) as e:
        raise BadInput(f"{path}: not a readable replay (truncated or corrupt: {first_line(e)})") from None
    if arrays["tick"].shape[0] != int(result.get("steps", -2)) + 1:
        raise BadInput(
            f"{path}: corrupt replay ({arrays['tick'].shape[0]} rows for {result.get('steps')} steps)"
        )
    return Replay(path, header, result, arrays)


def _column(column: pa.ChunkedArray) -> np.ndarray:
    parts = []
    for chunk in column.chunks:
        parts.append((chunk.flatten() if pa.types.is_fixed_size_list(chunk.type) else chunk).to_numpy())
    return np.concatenate(parts) if parts else np.zeros(0)


def list_replays(directory: str | Path) -> list[Path]:
    """The finished replay files of a directory, by name; BadInput when there is none."""
    directory = Path(directory)
    if not directory.is_dir():
        raise BadInput(f"{directory}: no such directory")
    files = sorted(p for p in directory.iterdir() if p.is_file() and p.name.endswith(SUFFIX))
    if not files:
        raise BadInput(f"{directory}: no replays (*{SUFFIX}) in this directory")
    return files


__all__ = [
    "FORMAT_VERSION",
    "NO_ACTION",
    "PREDICTION_COLUMNS",
    "Replay",
    "ReplayWriter",
    "STATE_COLUMNS",
    "list_replays",
    "read_replay",
    "read_replay_info",
]
