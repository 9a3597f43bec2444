"""What ``fivectl runs show|plot`` report about one run: checkpoints plus the metrics log."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from fivectl.errors import BadInput, FivectlError
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.metrics import ITERATION, MetricsLog
from fivectl.store.rundir import RunDir

# metrics summarised from the last row (the trainer writes these)
HEADLINE = ("samples", "samples_per_s", "staleness_mean", "sample_reuse")
# learning curves in plot order; any other numeric column is plotted after these
CURVES = (
    "policy_loss",
    "value_loss",
    "entropy",
    "approx_kl",
    "clip_fraction",
    "explained_variance",
    "win_rate",
    "game_seconds",
    "samples_per_s",
    "staleness_mean",
    "sample_reuse",
)
NOT_CURVES = {ITERATION, "version", "samples", "time", "wall_seconds"}
# x axes of the learning curves: samples compare runs on any machine; minutes depend on the CPU (and GPU)
X_AXES = ("samples", "minutes")


def run_summary(run: RunDir) -> dict[str, Any]:
    """A JSON-ready summary: versions, samples, throughput, staleness, reuse, latest metrics, checkpoints."""
    store = CheckpointStore(run.checkpoints_path)
    milestone_every = _milestone_every(run)
    checkpoints = [
        {
            "version": i.version,
            "bytes": i.bytes,
            "milestone": i.milestone,
            "model_only": i.slim,
            **_ckpt_counters(store, i.version),
        }
        for i in store.info(milestone_every)
    ]
    table = MetricsLog(run.metrics_path).read()
    last = _last_row(table)
    summary: dict[str, Any] = {
        "path": str(run.path),
        "name": run.meta.get("name", ""),
        "schema_version": run.meta.get("schema_version"),
        "fivectl_version": run.meta.get("fivectl_version"),
        "latest_version": store.latest(),
        "versions": [c["version"] for c in checkpoints],
        "iterations": last.get(ITERATION, 0) if last else 0,
    }
    for key in HEADLINE:
        summary[key] = last.get(key)
    if summary["samples"] is None:
        summary["samples"] = _samples_fallback(run, checkpoints)
    summary["latest_metrics"] = last
    summary["checkpoint_summary"] = summarize_checkpoints(checkpoints)
    summary["checkpoints"] = checkpoints
    summary["lineage"] = run.meta.get("lineage", [])
    summary["first_stage"] = first_stage_summary(run)
    return summary


def first_stage_summary(run: RunDir) -> dict[str, Any] | None:
    """The run's first stage (``[curriculum]``), None without one: its recipe, the samples it has trained against
    those the run asks of it, its latest version, and its own first stage (a chain)."""
    if not RunDir.is_run(run.first_stage_path):
        return None
    stage = RunDir.open(run.first_stage_path)
    store = CheckpointStore(stage.checkpoints_path)
    latest = store.latest()
    trained = _last_row(MetricsLog(stage.metrics_path).read()).get("samples")
    if trained is None and latest is not None:
        trained = _ckpt_counters(store, latest).get("samples")
    try:
        asked = run.load_recipe().curriculum.first_samples
    except FivectlError:
        asked = None
    return {
        "path": str(stage.path),
        "name": stage.meta.get("name", ""),
        "samples": trained or 0,
        "samples_asked": asked,
        "latest_version": latest,
        "first_stage": first_stage_summary(stage),
    }


def summarize_checkpoints(checkpoints: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The checkpoint list in a few figures (a 30-minute run keeps ~200 versions): how many, first and last,
    the spacing between neighbours (min, median, max), the milestones, how many are model-only (opponent-pool
    members), unreadable, and their size. None when there is no checkpoint."""
    if not checkpoints:
        return None
    versions = np.array([c["version"] for c in checkpoints], dtype=np.int64)
    gaps = np.diff(versions)
    return {
        "count": len(checkpoints),
        "first": int(versions[0]),
        "last": int(versions[-1]),
        "spacing": (
            {"min": int(gaps.min()), "median": float(np.median(gaps)), "max": int(gaps.max())}
            if len(gaps)
            else None
        ),
        "milestones": [c["version"] for c in checkpoints if c["milestone"]],
        "model_only": sum(bool(c.get("model_only")) for c in checkpoints),
        "unreadable": [c["version"] for c in checkpoints if c.get("readable") is False],
        "bytes": sum(c["bytes"] for c in checkpoints),
    }


def plot_learning_curves(run: RunDir, out: Path | None = None, x: str = "samples") -> Path:
    """Write a PNG grid of the learning curves against ``x``: ``samples`` (the iteration when the log has no
    sample counts) or ``minutes`` of training (wall clock, summed over resumes). Returns its path."""
    if x not in X_AXES:
        raise BadInput(f"--x: must be one of {', '.join(X_AXES)}, got {x!r}")
    table = MetricsLog(run.metrics_path).read()
    if table.num_rows == 0:
        raise BadInput(f"{run.path}: no metrics yet (nothing to plot)")
    columns = _curve_columns(table)
    if not columns:
        raise BadInput(f"{run.path}: the metrics have no numeric curves to plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x_label, x_values = _x_axis(run, table, x)
    ncols = min(3, len(columns))
    nrows = math.ceil(len(columns) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 2.8 * nrows), squeeze=False)
    for ax, name in zip(axes.flat, columns, strict=False):
        y = (
            table[name].cast(pa.float64()).to_numpy(zero_copy_only=False)
        )  # nulls become NaN: gaps in the line
        ax.plot(x_values, y, lw=1.2)
        ax.set_title(name, fontsize=10)
        ax.grid(alpha=0.3)
        ax.set_xlabel(x_label, fontsize=8)
        ax.tick_params(labelsize=8)
    for ax in list(axes.flat)[len(columns) :]:
        ax.set_visible(False)
    fig.suptitle(f"{run.meta.get('name') or run.path.name}: learning curves", fontsize=12)
    fig.tight_layout()
    out = Path(out) if out is not None else run.logs_path / "learning_curves.png"
    return save_figure(fig, out)


def save_figure(fig: Any, out: Path) -> Path:
    """Write a matplotlib figure as a PNG at ``out`` (its folder made) and close it; FivectlError if it cannot."""
    import matplotlib.pyplot as plt

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=100)
    except OSError as e:
        raise FivectlError(f"cannot write {out}: {e.strerror or e}") from None
    finally:
        plt.close(fig)
    return out


def _x_axis(run: RunDir, table: pa.Table, x: str) -> tuple[str, np.ndarray]:
    """The label and values of the x axis ``x`` for every metrics row."""
    if x == "minutes":
        if "wall_seconds" not in table.column_names or table["wall_seconds"].null_count:
            raise BadInput(f"{run.path}: the metrics log has no wall_seconds column to plot against minutes")
        return "minutes of training", table["wall_seconds"].to_numpy(zero_copy_only=False) / 60.0
    key = "samples" if "samples" in table.column_names and table["samples"].null_count == 0 else ITERATION
    return key, table[key].to_numpy(zero_copy_only=False)


def _curve_columns(table: pa.Table) -> list[str]:
    numeric = [
        f.name
        for f in table.schema
        if (pa.types.is_floating(f.type) or pa.types.is_integer(f.type)) and f.name not in NOT_CURVES
    ]
    numeric = [n for n in numeric if table[n].null_count < table.num_rows]
    first = [c for c in CURVES if c in numeric]
    return first + sorted(c for c in numeric if c not in first)


def _last_row(table: pa.Table) -> dict[str, Any]:
    if table.num_rows == 0:
        return {}
    row = table.slice(table.num_rows - 1).to_pylist()[0]
    return {k: _finite_or_none(v) for k, v in row.items()}


def _finite_or_none(v: Any) -> Any:
    # JSON has no NaN; a NaN metric (e.g. explained variance of a constant return) reads as "no value"
    return None if isinstance(v, float) and not math.isfinite(v) else v


def _milestone_every(run: RunDir) -> int:
    try:
        return int(run.load_recipe().train.milestone_every)
    except (BadInput, AttributeError):
        return 0


def _ckpt_counters(store: CheckpointStore, version: int) -> dict[str, Any]:
    try:
        attrs = store.load_attrs(version)
    except FivectlError:
        return {"readable": False}
    # the trainer keeps them under "counters"; other writers (tests, tools) at the top level
    counters = attrs.get("counters") if isinstance(attrs.get("counters"), dict) else {}
    found = {**counters, **attrs}
    return {k: found[k] for k in ("iteration", "samples") if isinstance(found.get(k), int | float)}


def _samples_fallback(run: RunDir, checkpoints: list[dict[str, Any]]) -> Any:
    for c in reversed(checkpoints):
        if "samples" in c:
            return c["samples"]
    return run.meta.get("samples")


__all__ = ["first_stage_summary", "plot_learning_curves", "run_summary", "summarize_checkpoints"]
