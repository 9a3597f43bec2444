"""The draft table: P(team 0 wins) of every lineup, in a Zarr store (``fivectl draft precompute``).

Layout: array ``p_team0_win`` float32 [lineups] (numbered by :class:`fivectl.draft.lineups.LineupSpace`) and
``done`` uint8 [chunks], one flag per chunk of the table. Zarr writes every chunk file atomically (stage, then
rename), and a chunk's flag is set only after its values are written, so a ``kill -9`` at any moment loses at
most the chunk in progress, and a rerun computes only the chunks without a flag. Attributes: the game
(``1v1``...), team size, lanes, hero pool, the model (run, version), the schema version, chunk size, lane samples.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from fivectl import __version__
from fivectl.draft.factored import FactoredFirstFrame, factorable
from fivectl.draft.lineups import LineupSpace
from fivectl.draft.model import DraftModel, FirstFrame
from fivectl.errors import BadInput
from fivectl.sim import HERO_NAMES

VALUES = "p_team0_win"
DONE = "done"
# attributes that must match for a rerun to resume a table instead of mixing two models' values
IDENTITY = ("game", "team_size", "lanes", "pool", "run", "model_version", "schema_version", "chunk", "lane_samples")


@dataclass
class DraftTable:
    path: Path
    attrs: dict[str, Any]
    values: np.ndarray  # float32 [lineups]
    done: np.ndarray  # bool [chunks]

    @property
    def space(self) -> LineupSpace:
        return LineupSpace(self.attrs["pool"], self.attrs["team_size"])

    @property
    def team_size(self) -> int:
        return int(self.attrs["team_size"])

    @property
    def complete(self) -> bool:
        return bool(self.done.all())


def open_table(path: str | Path, require_complete: bool = True) -> DraftTable:
    """Read a table; a missing, foreign or (with ``require_complete``) unfinished store is BadInput."""
    path = Path(path)
    try:
        group = zarr.open_group(str(path), mode="r")
        attrs = dict(group.attrs)
        values, done = group[VALUES][:], group[DONE][:].astype(bool)
    except (FileNotFoundError, KeyError, ValueError) as e:
        raise BadInput(
            f"{path}: not a draft table ({type(e).__name__}); make one with fivectl draft precompute"
        ) from None
    if attrs.get("kind") != "draft_table":
        raise BadInput(f"{path}: not a draft table; make one with fivectl draft precompute")
    table = DraftTable(path, attrs, values, done)
    if require_complete and not table.complete:
        raise BadInput(
            f"{path}: table incomplete ({int(done.sum())}/{len(done)} chunks); rerun fivectl draft precompute "
            "with the same arguments to finish it"
        )
    return table


def check_table_matches(table: DraftTable, model: DraftModel) -> None:
    """A table rates one game size and schema: using it with another model's game is BadInput."""
    want = {"game": model.game_name, "schema_version": model.schema.version}
    have = {k: table.attrs.get(k) for k in want}
    if have != want:
        raise BadInput(
            f"{table.path}: table of a {have['game']} game, schema v{have['schema_version']}; "
            f"the model plays {want['game']} with schema v{want['schema_version']}"
        )


def table_attrs(model: DraftModel, space: LineupSpace, chunk: int, lane_samples: int) -> dict[str, Any]:
    return {
        "kind": "draft_table",
        "game": model.game_name,
        "team_size": model.team_size,
        "lanes": model.game.lanes,
        "pool": space.pool.tolist(),
        "heroes": [HERO_NAMES[h] for h in space.pool],
        "run": model.run,
        "model_version": model.version,
        "schema_version": model.schema.version,
        "chunk": chunk,
        "lane_samples": lane_samples,
        "lineups": space.size,
        "fivectl_version": __version__,
    }


@dataclass
class PrecomputeReport:
    path: str
    lineups: int
    chunks: int
    chunks_skipped: int
    chunks_computed: int
    complete: bool
    seconds: float
    method: str  # "factored" or "direct" (see make_rater)


def precompute(
    model: DraftModel,
    out: str | Path,
    chunk: int = 65536,
    batch: int = 4096,
    lane_samples: int = 3,
    limit: int | None = None,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    method: str = "factored",
) -> PrecomputeReport:
    """Rate every lineup of the model's game into ``out`` (resuming a table of the same model and game).

    ``limit`` stops after the chunks covering the first ``limit`` lineups (benchmarks); ``progress(done, total)``
    counts lineups, including the chunks a previous run finished. ``method``: see :func:`make_rater`.
    """
    import time

    from fivectl.sim import resolve_pool

    if chunk < 1 or batch < 1:
        raise BadInput(f"--chunk and --batch must be >= 1, got {chunk} and {batch}")
    space = LineupSpace(resolve_pool(model.game), model.team_size)
    rater, method = make_rater(model, space, min(batch, chunk, space.size), seed, lane_samples, method)
    attrs = table_attrs(model, space, chunk, rater.lane_samples)
    n_chunks = math.ceil(space.size / chunk)
    values, done = _open_or_create(Path(out), attrs, space.size, chunk, n_chunks)
    wanted = n_chunks if limit is None else min(n_chunks, math.ceil(max(limit, 1) / chunk))
    started = time.perf_counter()
    skipped = computed = 0
    finished = int(done[:].sum()) * chunk
    for c in range(wanted):
        if done[c]:
            skipped += 1
            continue
        lo, hi = c * chunk, min(space.size, (c + 1) * chunk)
        part = np.empty(hi - lo, dtype=np.float32)
        for s in range(lo, hi, rater.batch):
            e = min(hi, s + rater.batch)
            part[s - lo : e - lo] = rater.win_probs(space.lineups(s, e))
            if progress is not None:
                progress(min(space.size, finished + e - lo), space.size)
        values[lo:hi] = part  # one chunk file, written atomically by the store
        done[c] = 1  # only now is the chunk finished
        finished += hi - lo
        computed += 1
    complete = bool(done[:].all())
    if complete and computed:
        from fivectl.draft.search import store_search_caches  # the search reads tables: import it late

        store_search_caches(open_table(out))
    return PrecomputeReport(
        str(out), space.size, n_chunks, skipped, computed, complete, time.perf_counter() - started, method
    )


METHODS = ("factored", "direct")


def make_rater(model: DraftModel, space: LineupSpace, batch: int, seed: int, lane_samples: int, method: str):
    """(rater, method used). ``direct``: :class:`FirstFrame`, the whole network on both teams' observations.
    ``factored``: :class:`fivectl.draft.factored.FactoredFirstFrame`, the same numbers with the lineup-independent
    work done once per team; it is first compared with the direct path on sample lineups spread over the table,
    and the direct path is used if the schema does not allow it or the two differ."""
    if method not in METHODS:
        raise BadInput(f"--method: factored or direct, got {method!r}")
    if method == "direct" or not factorable(model):
        return FirstFrame(model, batch, seed, lane_samples), "direct"
    rater = FactoredFirstFrame(model, space, batch, seed, lane_samples)
    sample = np.linspace(0, space.size - 1, min(batch, 32)).astype(np.int64)
    try:
        rater.check(np.concatenate([space.lineups(int(i), int(i) + 1) for i in sample]))
    except BadInput:
        return rater.direct, "direct"
    return rater, "factored"


def _open_or_create(path: Path, attrs: dict, size: int, chunk: int, n_chunks: int):
    if path.exists():
        try:
            group = zarr.open_group(str(path), mode="r+")
            have = dict(group.attrs)
        except (FileNotFoundError, ValueError) as e:
            raise BadInput(f"{path}: exists and is not a draft table ({type(e).__name__})") from None
        diff = [k for k in IDENTITY if have.get(k) != attrs[k]]
        if have.get("kind") != "draft_table" or diff:
            shown = ", ".join(f"{k} {have.get(k)!r} != {attrs[k]!r}" for k in diff) or "not a draft table"
            raise BadInput(f"{path}: exists with another table ({shown}); choose another --out")
        return group[VALUES], group[DONE]
    group = zarr.open_group(str(path), mode="w-", attributes=attrs)
    values = group.create_array(VALUES, shape=(size,), chunks=(chunk,), dtype="float32", fill_value=np.nan)
    done = group.create_array(DONE, shape=(n_chunks,), chunks=(1,), dtype="uint8", fill_value=0)
    return values, done


def lineup_values(table: DraftTable, lineups: np.ndarray) -> np.ndarray:
    """P(team 0 wins) of hero-id lineups [m, 2, k] from the table."""
    return table.values[table.space.index(lineups)].astype(np.float64)


__all__ = ["DraftTable", "PrecomputeReport", "check_table_matches", "lineup_values", "open_table", "precompute"]
