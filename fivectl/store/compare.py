"""What ``fivectl runs compare`` reports: the same metrics of several runs side by side, at the same samples.

Seeds and ideas are compared per sample, not per minute: a faster CPU gives more samples in the same time, and
two runs of one recipe differ most in *when* they learn. Each run's value at a mark is its last logged value at
or before that many samples (a rolling metric such as ``bot_win_rate_recent`` is already a window); a run that has
not reached the mark has none there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from fivectl.errors import BadInput
from fivectl.store.metrics import MetricsLog
from fivectl.store.rundir import RunDir
from fivectl.store.summary import save_figure

DEFAULT_METRICS = ("bot_win_rate_recent", "pool_past_win_rate_recent", "entropy")
DEFAULT_MARKS = 10  # marks over the longest run when no spacing is given


def compare_runs(runs: list[RunDir], metrics: list[str], every: int | None = None) -> dict[str, Any]:
    """The values of ``metrics`` in each run at sample marks ``every`` apart (default: DEFAULT_MARKS over the
    longest run), and each run's last values. BadInput for a run without metrics or a metric no run logged."""
    if every is not None and every <= 0:
        raise BadInput(f"--every: a number of samples > 0, got {every}")
    curves = [_curves(run, metrics) for run in runs]
    logged = {m for c in curves for m, y in c["metrics"].items() if np.isfinite(y).any()}
    missing = [m for m in metrics if m not in logged]
    if missing:
        known = sorted({m for c in curves for m in c["columns"]})
        raise BadInput(f"--metric: no run logged {', '.join(missing)} (logged: {', '.join(known)})")
    longest = max(int(c["samples"][-1]) for c in curves)
    step = every or max(1, _round_step(longest / DEFAULT_MARKS))
    marks = list(range(step, longest + 1, step))
    return {
        "x": "samples",
        "marks": marks,
        "runs": [
            {
                "path": str(run.path),
                "name": run.meta.get("name", ""),
                "samples": int(c["samples"][-1]),
                "metrics": {m: [_value_at(c["samples"], c["metrics"][m], mark) for mark in marks] for m in metrics},
                "last": {m: _last_value(c["metrics"][m]) for m in metrics},
            }
            for run, c in zip(runs, curves, strict=True)
        ],
    }


def plot_compared(comparison: dict[str, Any], runs: list[RunDir], metrics: list[str], out: Path) -> Path:
    """A PNG with one panel per metric and one line per run, against samples."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(metrics), figsize=(4.6 * len(metrics), 3.2), squeeze=False)
    for ax, metric in zip(axes.flat, metrics, strict=True):
        for run, entry in zip(runs, comparison["runs"], strict=True):
            c = _curves(run, [metric])
            ax.plot(c["samples"] / 1e6, c["metrics"][metric], lw=1.2, label=_label(entry))
        ax.set_title(metric, fontsize=10)
        ax.set_xlabel("samples (millions)", fontsize=8)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, out)


def _curves(run: RunDir, metrics: list[str]) -> dict[str, Any]:
    table = MetricsLog(run.metrics_path).read()
    if table.num_rows == 0 or "samples" not in table.column_names:
        raise BadInput(f"{run.path}: no metrics with samples yet (nothing to compare)")
    samples = _floats(table, "samples")
    keep = np.isfinite(samples)
    if not keep.any():
        raise BadInput(f"{run.path}: no metrics with samples yet (nothing to compare)")
    return {
        "samples": samples[keep],
        "columns": table.column_names,
        "metrics": {
            m: _floats(table, m)[keep] if m in table.column_names else np.full(int(keep.sum()), np.nan)
            for m in metrics
        },
    }


def _floats(table: pa.Table, name: str) -> np.ndarray:
    return table[name].cast(pa.float64()).to_numpy(zero_copy_only=False)  # nulls become NaN


def _value_at(samples: np.ndarray, values: np.ndarray, mark: int) -> float | None:
    """The last finite value logged at or before ``mark`` samples; None past the run's end or before any."""
    if samples[-1] < mark:
        return None
    upto = np.flatnonzero((samples <= mark) & np.isfinite(values))
    return float(values[upto[-1]]) if upto.size else None


def _last_value(values: np.ndarray) -> float | None:
    finite = np.flatnonzero(np.isfinite(values))
    return float(values[finite[-1]]) if finite.size else None


def _round_step(step: float) -> int:
    """``step`` rounded down to 1, 2 or 5 times a power of ten: marks a reader can take in."""
    power = 10 ** int(np.floor(np.log10(max(step, 1.0))))
    return int(max(m for m in (1, 2, 5) if m * power <= max(step, 1.0)) * power)


def _label(entry: dict[str, Any]) -> str:
    return f"{Path(entry['path']).name} ({entry['name']})" if entry["name"] else Path(entry["path"]).name


__all__ = ["DEFAULT_METRICS", "compare_runs", "plot_compared"]
