"""End-to-end training throughput: the actor-learner (the recipe's workers) against a synchronous baseline.

    .venv/bin/python benchmarks/train_throughput.py --minutes 3 --json

Both runs train the same recipe (default: the quickstart) on the same game and model for the same wall time.
The baseline is ``--workers 0``: one process that alternates rollout and learning, like CleanRL's ppo.py.
Reports samples/s (agent-steps trained on per second, after start-up) and where the time goes.
``--learners N`` (N > 1) adds a third run in the same invocation: the actor-learner with N data-parallel
learners (``fivectl train --learners N``; each learner takes batch_windows windows, so its batch is N times
larger). ``--backend ray`` adds a run with the rollout workers as Ray actors (``fivectl train --backend ray``,
on a Ray instance started for the run, or the cluster at ``--ray-address``): on one machine, its samples/s
against the local run's is Ray's overhead. ``--no-baseline`` skips the synchronous run (quick checks).

``--against REF`` is the before/after comparison of a change instead: it checks out the git revision REF into a
temporary worktree and trains the old code and this checkout alternately (old, new, new, old, ...) for
``--rounds`` pairs, each with its own checkout's copy of the recipe, and reports every pair's ratio new / old and
their median. Alternating back to back is what makes the ratio hold on a noisy machine; the CPU (model and vector
units) is printed beside the figures.

    .venv/bin/python benchmarks/train_throughput.py --against 019402f --rounds 3 --minutes 2 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.compute as pc

from fivectl.store.metrics import MetricsLog

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import cpu_model  # noqa: E402
from _train import train_for  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def run_training(
    recipe: Path,
    workers: int | None,
    minutes: float,
    run_dir: Path,
    extra: list[str],
    learners: int = 1,
    code: Path | None = None,
) -> dict:
    started = time.perf_counter()
    worker_args = [] if workers is None else ["--workers", str(workers)]
    summary = train_for(recipe, run_dir, minutes, *worker_args, "--learners", str(learners), *extra, code=code)
    table = MetricsLog(run_dir / "metrics").read()
    # Steady state: skip the first 20% of iterations (start-up, compile, first fragments).
    n = table.num_rows
    steady = table.slice(n // 5) if n >= 5 else table
    first, last = steady.column("samples")[0].as_py(), steady.column("samples")[-1].as_py()
    t0, t1 = steady.column("wall_seconds")[0].as_py(), steady.column("wall_seconds")[-1].as_py()

    def total(name: str) -> float:
        return float(pc.sum(steady.column(name)).as_py() or 0.0) if name in steady.column_names else 0.0

    sim = steady.column("seconds_sim_total")
    infer = steady.column("seconds_infer_total")
    return {
        "workers": workers,
        "learners": learners,
        "minutes": minutes,
        "samples": summary["samples"],
        "iterations": summary["iterations"],
        "samples_per_s": (last - first) / max(t1 - t0, 1e-9),
        "samples_per_s_overall": summary["samples"] / max(time.perf_counter() - started, 1e-9),
        "staleness_mean": float(pc.mean(steady.column("staleness_mean")).as_py()),
        "time_split_s": {
            "simulation (workers, summed)": sim[-1].as_py() - sim[0].as_py(),
            "inference (workers, summed)": infer[-1].as_py() - infer[0].as_py(),
            "learner": total("seconds_learn"),
            "transfer (copy out of shared memory)": total("seconds_copy"),
            "learner waiting for fragments": total("seconds_wait"),
            "wall": t1 - t0,
        },
    }


def checkout(ref: str, where: Path) -> Path:
    """A detached worktree of ``ref`` at ``where`` (removed by ``remove_checkout``)."""
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(where), ref], check=True,
                   capture_output=True, text=True)
    return where


def remove_checkout(where: Path) -> None:
    subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)], capture_output=True)


def in_checkout(recipe: Path, code: Path) -> Path:
    """The same recipe file in another checkout (recipes inside the repository), else the given one."""
    try:
        # absolute() keeps the repository's recipes/ link, which older checkouts have as a plain folder
        return code / recipe.absolute().relative_to(REPO)
    except ValueError:
        return recipe


def compare_with(ref: str, args: argparse.Namespace, extra: list[str], tmp: Path) -> dict:
    """Old code (``ref``) and this checkout alternately, ``args.rounds`` pairs: samples/s and ratios new / old."""
    old_code = checkout(ref, tmp / "old-code")
    try:
        pairs = []
        for i in range(args.rounds):
            order = ("old", "new") if i % 2 == 0 else ("new", "old")
            pair = {}
            for which in order:
                code = old_code if which == "old" else None
                recipe = in_checkout(args.recipe, old_code) if code else args.recipe
                run = run_training(recipe, args.workers, args.minutes, tmp / f"{which}-{i}", extra, code=code)
                pair[which] = run["samples_per_s"]
                print(f"round {i + 1} {which}: {run['samples_per_s']:,.0f} samples/s", file=sys.stderr)
            pair["ratio"] = pair["new"] / max(pair["old"], 1e-9)
            pairs.append(pair)
    finally:
        remove_checkout(old_code)
    return {
        "against": ref,
        "minutes": args.minutes,
        "pairs": pairs,
        "median_ratio": statistics.median(p["ratio"] for p in pairs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=3.0, help="wall-clock minutes per configuration")
    parser.add_argument("--recipe", type=Path, default=REPO / "recipes" / "quickstart.toml")
    parser.add_argument("--workers", type=int, default=None, help="rollout workers (default: the recipe's)")
    parser.add_argument("--learners", type=int, default=1, help="also run with this many learners (> 1)")
    parser.add_argument(
        "--backend", choices=("local", "ray"), default="local", help="ray: also run with Ray actors as workers"
    )
    parser.add_argument("--ray-address", default="", help="Ray cluster for --backend ray (default: start one)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the synchronous single-process run")
    parser.add_argument("--against", default="", help="git revision of the old code: alternate old and new")
    parser.add_argument("--rounds", type=int, default=2, help="old/new pairs with --against")
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    extra = [x for o in args.overrides for x in ("--set", o)]
    if args.against:
        with tempfile.TemporaryDirectory() as tmp:
            result = {"recipe": str(args.recipe), "machine": cpu_model(), **compare_with(args.against, args, extra, Path(tmp))}
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            for i, pair in enumerate(result["pairs"], 1):
                print(f"pair {i}: old {pair['old']:,.0f}, new {pair['new']:,.0f} samples/s: {pair['ratio']:.2f}x")
            print(f"median new / old: {result['median_ratio']:.2f}x ({result['machine']})")
        return
    with tempfile.TemporaryDirectory() as tmp:
        actor_learner = run_training(args.recipe, args.workers, args.minutes, Path(tmp) / "async", extra)
        baseline = (
            None if args.no_baseline else run_training(args.recipe, 0, args.minutes, Path(tmp) / "sync", extra)
        )
        several = (
            run_training(args.recipe, args.workers, args.minutes, Path(tmp) / "dp", extra, args.learners)
            if args.learners > 1
            else None
        )
        on_ray = None
        if args.backend == "ray":
            ray_args = ["--backend", "ray"] + (["--ray-address", args.ray_address] if args.ray_address else [])
            on_ray = run_training(args.recipe, args.workers, args.minutes, Path(tmp) / "ray", extra + ray_args)
    result = {"recipe": str(args.recipe), "machine": cpu_model(), "actor_learner": actor_learner}
    if baseline is not None:
        result["synchronous_baseline"] = baseline
        result["speedup"] = actor_learner["samples_per_s"] / max(baseline["samples_per_s"], 1e-9)
    if on_ray is not None:
        result["ray_backend"] = on_ray
        result["ray_vs_local"] = on_ray["samples_per_s"] / max(actor_learner["samples_per_s"], 1e-9)
    if several is not None:
        result["several_learners"] = several
        result["several_learners_vs_one"] = several["samples_per_s"] / max(actor_learner["samples_per_s"], 1e-9)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        workers = "the recipe's" if args.workers is None else args.workers
        print(f"actor-learner ({workers} workers): {actor_learner['samples_per_s']:,.0f} samples/s")
        if baseline is not None:
            print(f"synchronous baseline:       {baseline['samples_per_s']:,.0f} samples/s")
            print(f"speedup: {result['speedup']:.2f}x")
        if several is not None:
            print(
                f"actor-learner, {args.learners} learners: {several['samples_per_s']:,.0f} samples/s "
                f"({result['several_learners_vs_one']:.2f}x one learner)"
            )
        if on_ray is not None:
            print(
                f"actor-learner, Ray actors as workers: {on_ray['samples_per_s']:,.0f} samples/s "
                f"({result['ray_vs_local']:.2f}x local workers)"
            )


if __name__ == "__main__":
    main()
