"""Anneal a change into a trained run and report what the guard saw (``fivectl anneal``, paper appendix B).

1. A copy of the trained run ``--parent`` (never the run itself), or, for a change that needs a surgery first
   (``storm-maul``: ``surgery add-action``; ``new-hero``: ``surgery add-hero``), that surgery's child.
2. ``fivectl anneal start`` (which rates the start version under the change: the guard's baseline), then
   ``fivectl train --resume`` for ``--minutes`` of wall time.
3. ``fivectl anneal status --json`` and ``--plot``: the fraction over samples and wall time, every guard verdict,
   and when the fraction first reached 1.

    .venv/bin/python benchmarks/anneal.py --parent runs/qs --change fast-waves --over 1.5e6 --minutes 10 \\
        --every 150 --work runs/anneal --json

Run it alone on the machine: training takes both cores (the guard's games take part of them).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import cpu_model  # noqa: E402
from surgery_learning import fivectl_json  # noqa: E402


def prepare(parent: Path, change: str, out: Path) -> dict | None:
    """``out``: a copy of ``parent`` or the surgery child the change needs; the surgery's report, if any."""
    from fivectl.sim import get_change, missing_surgery
    from fivectl.store.rundir import RunDir

    run = RunDir.open(parent)
    schema = run.obs_schema(run.load_recipe().model.schema_version)
    change = get_change(change)
    if missing_surgery(change, schema) is None:
        shutil.copytree(parent, out)
        return None
    if change.needs_action is not None:
        operation = ["add-action", str(parent), "--action", change.needs_action]
    else:
        operation = ["add-hero", str(parent), "--vocab", str(change.needs_hero_vocab)]
    return fivectl_json("surgery", *operation, "--out", str(out))


def wall_curve(run: Path, start_samples: int) -> list[dict]:
    """Per logged iteration of the anneal: samples, wall seconds since the anneal's first row, fraction."""
    from fivectl.store.metrics import MetricsLog

    rows = (
        MetricsLog(run / "metrics").read().select(["samples", "wall_seconds", "anneal_fraction"]).to_pylist()
    )
    rows = [r for r in rows if r["anneal_fraction"] is not None and r["samples"] > start_samples]
    t0 = rows[0]["wall_seconds"] if rows else 0.0
    return [{**r, "wall_seconds": r["wall_seconds"] - t0} for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parent", type=Path, required=True, help="a trained run (copied, never modified)")
    parser.add_argument("--change", required=True)
    parser.add_argument("--over", type=float, default=1.5e6, help="samples from 0 to 1 at full speed")
    parser.add_argument(
        "--minutes", type=float, default=10.0, help="wall minutes of training after the start"
    )
    parser.add_argument("--every", type=int, default=150, help="eval.every_versions: a guard verdict every N")
    parser.add_argument("--guard", type=float, default=2.0)
    parser.add_argument("--work", type=Path, required=True, help="the annealed run goes to WORK/CHANGE")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    run = args.work / args.change
    if run.exists():
        raise SystemExit(f"{run} exists")
    args.work.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}
    t = time.perf_counter()
    surgery = prepare(args.parent, args.change, run)
    seconds["surgery"] = round(time.perf_counter() - t, 1)
    t = time.perf_counter()
    started = fivectl_json(
        "anneal",
        "start",
        str(run),
        "--change",
        args.change,
        "--over",
        str(args.over),
        "--guard",
        str(args.guard),
        "--set",
        f"eval.every_versions={args.every}",
    )
    seconds["baseline"] = round(time.perf_counter() - t, 1)
    t = time.perf_counter()
    trained = fivectl_json("train", "--run", str(run), "--resume", "--max-minutes", str(args.minutes))
    seconds["training"] = round(time.perf_counter() - t, 1)
    status = fivectl_json("anneal", "status", str(run), "--plot", str(run / "anneal.png"))
    curve = wall_curve(run, status["start_samples"])
    full = next((r for r in curve if r["anneal_fraction"] >= 1.0), None)
    out = {
        "cpu": cpu_model(),
        "change": args.change,
        "parent": str(args.parent),
        "surgery": surgery
        and {k: surgery[k] for k in ("parent_version", "parameters_before", "parameters_after")},
        "baseline": started["baseline"],
        "settings": status["settings"],
        "samples_trained": status["samples"] - status["start_samples"],
        "samples_per_s": trained.get("samples_per_s"),
        "final_fraction": status["fraction"],
        "reverts": status["reverts"],
        "full_at": full
        and {"samples": full["samples"] - status["start_samples"], "wall_s": full["wall_seconds"]},
        "guard_history": status["guard_history"],
        "plot": str(run / "anneal.png"),
        "seconds": seconds,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"CPU: {out['cpu']}; {args.change} over {args.over:g} samples, {args.minutes} min of training")
    b = out["baseline"]
    print(
        f"  baseline v{b['version']} under the change: {b['mu']:.1f} +- {b['sigma']:.1f} ({b['games']} games)"
    )
    for e in out["guard_history"]:
        print(
            f"  v{e['version']} (trained at {e['fraction']:.3f}): {e['mu']:.1f} +- {e['sigma']:.1f}, "
            f"drop {e['drop']:.1f}: {e['action']}"
        )
    print(f"  fraction {out['final_fraction']:.3f}, reverts {out['reverts']}, 100% at {out['full_at']}")


if __name__ == "__main__":
    main()
