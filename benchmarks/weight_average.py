"""A run's policy at one version against the average of its weights over the versions just before it.

    .venv/bin/python benchmarks/weight_average.py RUN --at-samples 17000000 --window-samples 2500000 --json

Neighbouring checkpoints of a quickstart run win against bot:easy by more different rates than the games' noise
explains (benchmarks/RESULTS.md, 2026-11-30): a run's last version is one draw from a policy that still moves.
This measures whether the mean of the weights over a trailing window (every kept version whose sample count lies
within ``--window-samples`` before the chosen one, the chosen one included; only the past, so a trainer could
keep it as it goes) plays better. The averaged weights are written as the same version number into a run
directory of their own (``--out``, default a temporary one; run.json and the recipe copied), never into RUN, and
both are played against bot:easy and bot:medium with the same game seed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import cpu_model  # noqa: E402
from learning import versus  # noqa: E402

OPPONENTS = ("bot:easy", "bot:medium")


def samples_by_version(run) -> dict[int, int]:
    from fivectl.store.metrics import MetricsLog

    metrics = MetricsLog(run.metrics_path).read()
    return dict(
        zip(metrics.column("version").to_pylist(), metrics.column("samples").to_pylist(), strict=True)
    )


def choose_version(kept: list[int], samples: dict[int, int], at_samples: int | None) -> int:
    """The kept version nearest ``at_samples`` (the newest when None)."""
    if at_samples is None:
        return kept[-1]
    return min((v for v in kept if v in samples), key=lambda v: abs(samples[v] - at_samples))


def average_model(store, versions: list[int]) -> tuple[dict[str, np.ndarray], dict]:
    """The mean of the float arrays of ``versions``' model sections (others from the newest) and its attributes."""
    total: dict[str, np.ndarray] = {}
    newest = None
    for v in versions:
        newest = store.load(v, sections=["model"])
        for name, array in newest.arrays["model"].items():
            if array.dtype.kind == "f":
                total[name] = total.get(name, 0.0) + array.astype(np.float64)
    model = {
        name: (total[name] / len(versions)).astype(array.dtype) if name in total else array
        for name, array in newest.arrays["model"].items()
    }
    attrs = {k: v for k, v in newest.attrs.items() if k != "fivectl_checkpoint"}
    return model, attrs


def write_average(run_dir: Path, out_dir: Path, version: int, window: list[int]) -> None:
    from fivectl.store.checkpoint import CheckpointStore
    from fivectl.store.rundir import RunDir

    run = RunDir.open(run_dir)
    model, attrs = average_model(CheckpointStore(run.checkpoints_path), window)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in ("run.json", "recipe.toml"):
        shutil.copy2(run_dir / name, out_dir / name)
    CheckpointStore(RunDir.open(out_dir).checkpoints_path).save(version, {"model": model}, attrs)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run", type=Path)
    parser.add_argument(
        "--at-samples", type=int, default=None, help="the version nearest this (default: latest)"
    )
    parser.add_argument("--window-samples", type=int, default=2_500_000)
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--out", type=Path, default=None, help="run directory for the averaged weights")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    from fivectl.errors import BadInput
    from fivectl.evaluate.run_eval import MatchPlayer
    from fivectl.store.checkpoint import CheckpointStore
    from fivectl.store.rundir import RunDir

    if args.out is not None and (args.out / "run.json").exists():
        raise BadInput(f"{args.out}: already a run directory; --out must be a new one (RUN is never written)")
    run = RunDir.open(args.run)
    samples = samples_by_version(run)
    kept = CheckpointStore(run.checkpoints_path).versions()
    version = choose_version(kept, samples, args.at_samples)
    window = [v for v in kept if v in samples and 0 <= samples[version] - samples[v] <= args.window_samples]

    tmp = tempfile.TemporaryDirectory()
    out_dir = args.out or Path(tmp.name) / "average"
    write_average(args.run, out_dir, version, window)

    player = MatchPlayer(run.load_recipe().game, workers=1, batch=args.batch)
    specs = {"alone": f"{args.run}@{version}", "averaged": f"{out_dir}@{version}"}
    matches = [(spec, opponent, args.games, args.seed) for spec in specs.values() for opponent in OPPONENTS]
    results = iter(versus(r.to_dict()) for r in player.results(matches))
    player.close()
    out = {
        "cpu": cpu_model(),
        "version": version,
        "samples": samples[version],
        "window": {"versions": len(window), "first": window[0], "first_samples": samples[window[0]]},
        **{kind: {opponent: next(results) for opponent in OPPONENTS} for kind in specs},
    }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{out['cpu']}: v{version} ({samples[version]:,} samples), average of {len(window)} versions")
        for kind in specs:
            line = ", ".join(f"{o} {out[kind][o]['wins']}/{out[kind][o]['games']}" for o in OPPONENTS)
            print(f"  {kind:9s} {line}")


if __name__ == "__main__":
    from fivectl.errors import FivectlError

    try:
        main()
    except FivectlError as e:  # bad input or a failed run: one line and its exit code, as the CLI does
        print(f"error: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
