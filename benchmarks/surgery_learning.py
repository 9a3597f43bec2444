"""Does a model keep what it learned through surgery, and go on learning after it?

1. The parent: the quickstart trained for ``--parent-minutes`` (or an existing run given with ``--parent``).
2. The surgery, through the CLI: ``add-obs --schema 3`` or ``widen --lstm 192`` (``--op``), then
   ``surgery verify`` (the operated model against the parent on recorded observations).
3. The child resumes training for ``--child-minutes``.
4. Games, each through ``fivectl evaluate match`` (``--games`` each, sides alternating, same seed):
   the child's latest version against the parent's last version as operated (the child should win at least half: the
   lower end of the 95% interval at or above 0.5 means it is significantly better, an upper end below 0.5
   that it lost what it knew), and the child's and the parent's latest versions against bot:easy.

    .venv/bin/python benchmarks/surgery_learning.py --parent-minutes 30 --child-minutes 15 --op add-obs \
        --work runs/surgery-learning --json
    .venv/bin/python benchmarks/surgery_learning.py --parent runs/surgery-learning/parent --op widen ...

Every step's wall time is reported; run it alone on the machine (training takes both cores).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import cpu_model  # noqa: E402
from _train import train_for  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
OPERATIONS = {"add-obs": ["add-obs", "--schema", "3"], "widen": ["widen", "--lstm", "192"]}


def fivectl_json(*args: str) -> dict:
    """Run ``fivectl ARGS --json`` and return its JSON output."""
    proc = subprocess.run(
        [sys.executable, "-m", "fivectl.cli.main", *args, "--json"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"fivectl {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-3000:]}")
    return json.loads(proc.stdout)


def resume_for(run_dir: Path, minutes: float) -> dict:
    """``fivectl train --run RUN --resume --max-minutes M --json``."""
    return fivectl_json("train", "--run", str(run_dir), "--resume", "--max-minutes", str(minutes))


def match(a: str, b: str, games: int, seed: int) -> dict:
    result = fivectl_json(
        "evaluate", "match", a, b, "--games", str(games), "--seed", str(seed), "--batch", "100"
    )
    return {
        "a": a,
        "b": b,
        "win_rate": result["a_win_rate"],
        "ci95": list(result["a_win_rate_ci95"]),
        "games": result["games"],
        "wins": result["a_wins"],
        "draws": result["draws"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", type=Path, required=True, help="directory of the parent and child runs")
    parser.add_argument(
        "--parent", type=Path, default=None, help="an existing parent run (skip its training)"
    )
    parser.add_argument("--parent-minutes", type=float, default=30.0)
    parser.add_argument("--child-minutes", type=float, default=15.0)
    parser.add_argument("--op", choices=sorted(OPERATIONS), default="add-obs")
    parser.add_argument("--recipe", type=Path, default=REPO / "recipes" / "quickstart.toml")
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--seed", type=int, default=12345, help="seed of the evaluation games")
    parser.add_argument(
        "--set", action="append", default=[], dest="overrides", help="recipe override of the parent"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    seconds: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[name] = round(now - clock, 1)
        clock = now

    parent = args.parent or args.work / "parent"
    parent_summary = None
    if args.parent is None:
        parent_summary = train_for(
            args.recipe, parent, args.parent_minutes, *[x for o in args.overrides for x in ("--set", o)]
        )
        lap("parent_training")
    child = args.work / f"child-{args.op}"
    surgery = fivectl_json("surgery", *OPERATIONS[args.op], str(parent), "--out", str(child))
    lap("surgery")
    verify = fivectl_json("surgery", "verify", str(child))
    lap("verify")
    child_summary = resume_for(child, args.child_minutes)
    lap("child_training")

    # The parent's last version as the child holds it (operated, the same function: see ``verify``), since two
    # agents of one match read one observation schema.
    operated_parent = f"{child}@{surgery['parent_version']}"
    versus_parent = match(f"{child}@latest", operated_parent, args.games, args.seed)
    child_vs_easy = match(f"{child}@latest", "bot:easy", args.games, args.seed)
    parent_vs_easy = match(f"{parent}@latest", "bot:easy", args.games, args.seed)
    lap("evaluation")

    out = {
        "cpu": cpu_model(),
        "op": OPERATIONS[args.op],
        "parent_minutes": None if args.parent else args.parent_minutes,
        "child_minutes": args.child_minutes,
        "parent_samples": parent_summary["samples"] if parent_summary else None,
        "child_samples": child_summary["samples"],
        "surgery": {
            k: surgery[k] for k in ("parent_version", "parameters_before", "parameters_after", "seconds")
        },
        "verify": verify,
        "child_vs_parent": versus_parent,
        "child_vs_easy": child_vs_easy,
        "parent_vs_easy": parent_vs_easy,
        "seconds": seconds,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"CPU: {out['cpu']}; {' '.join(out['op'])}; child trained {args.child_minutes} min after surgery")
    for key in ("child_vs_parent", "child_vs_easy", "parent_vs_easy"):
        r = out[key]
        print(
            f"  {r['a']} vs {r['b']}: {r['win_rate']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] ({r['games']} games)"
        )
    print(f"  seconds: {seconds}")


if __name__ == "__main__":
    main()
