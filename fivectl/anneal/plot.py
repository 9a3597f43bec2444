"""``fivectl anneal status --plot``: the fraction over samples, the guard's ratings and its reverts (PNG)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from fivectl.errors import BadInput
from fivectl.store.atomic import write_bytes_atomic


def plot_status(status: dict[str, Any], path: str | Path) -> Path:
    """Top: the fraction of games with the change and the share of samples played under it, against samples.
    Bottom: each guard evaluation's TrueSkill under the new rules, the baseline and the revert threshold; reverts
    in red on both."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    curve = status["curve"]
    history = status.get("guard_history", [])
    if not curve["samples"] and not history:
        raise BadInput(f"{status['run']}: nothing to plot yet: train the run with the anneal first")
    fig = Figure(figsize=(8, 6), dpi=100)
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.plot(curve["samples"], curve["fraction"], label="fraction of new games with the change")
    shares = [(s, v) for s, v in zip(curve["samples"], curve["variant_share"], strict=True) if v is not None]
    if shares:
        top.plot(*zip(*shares, strict=True), ".", markersize=3, alpha=0.5, label="share of samples under it")
    top.set_ylim(-0.02, 1.02)
    top.set_ylabel("fraction")
    top.set_title(f"anneal of {status['change']} ({status['state']})")
    baseline = status["baseline"]["mu"]
    guard = status.get("settings", {}).get("guard")
    if history:
        samples = [e["samples"] for e in history]
        bottom.errorbar(
            samples, [e["mu"] for e in history], yerr=[e["sigma"] for e in history], fmt="o", capsize=3,
            label="TrueSkill under the change",
        )  # fmt: skip
        for e in history:
            if e["action"] == "revert":
                for ax in (top, bottom):
                    ax.axvline(e["samples"], color="red", linewidth=0.8, alpha=0.6)
        bottom.plot([], [], color="red", label="revert")
    bottom.axhline(baseline, color="grey", linestyle="--", label=f"start ({baseline:.1f})")
    if guard is not None:
        bottom.axhline(baseline - guard, color="red", linestyle=":", label=f"start - guard ({guard:g})")
    bottom.set_xlabel("samples")
    bottom.set_ylabel("TrueSkill (random = 0)")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=8)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    path = Path(path)
    write_bytes_atomic(path, buf.getvalue())
    return path
