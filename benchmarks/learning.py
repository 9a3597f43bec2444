"""Proof of learning: train the quickstart recipe from scratch for M minutes, then measure the result.

    .venv/bin/python benchmarks/learning.py --minutes 30 --json --plot docs/learning_curve.png

Reports the latest version's win rate against ``random``, ``bot:easy`` and ``bot:medium`` (200 games each by
default, with Wilson 95% intervals) and its TrueSkill, plus a learning curve: win rate against bot:easy and
TrueSkill of checkpoints spread over the run, against wall-clock training time.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _train import train_for  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def train(recipe: Path, run_dir: Path, minutes: float, extra: list[str]) -> dict:
    return train_for(recipe, run_dir, minutes, "--set", "train.keep_last=100000", *extra)


def curve_versions(versions: list[int], points: int) -> list[int]:
    if len(versions) <= points:
        return versions
    step = (len(versions) - 1) / (points - 1)
    return sorted({versions[round(i * step)] for i in range(points)})


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--recipe", type=Path, default=REPO / "recipes" / "quickstart.toml")
    parser.add_argument("--games", type=int, default=200, help="games per opponent for the final version")
    parser.add_argument("--curve-points", type=int, default=8)
    parser.add_argument("--curve-games", type=int, default=40)
    parser.add_argument(
        "--eval-workers", type=int, default=2, help="processes that play the evaluation games"
    )
    parser.add_argument("--run", type=Path, default=None, help="keep the run here (default: a temp dir)")
    parser.add_argument("--plot", type=Path, default=None, help="write the learning curve PNG here")
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import numpy as np
    import torch

    torch.set_num_threads(1)
    from fivectl.evaluate import policy_agent  # noqa: F401 - registers RUN@VERSION specs
    from fivectl.evaluate.match import wilson_interval
    from fivectl.evaluate.run_eval import MatchPlayer, evaluate_run
    from fivectl.store.checkpoint import CheckpointStore
    from fivectl.store.metrics import MetricsLog
    from fivectl.store.rundir import RunDir

    tmp = tempfile.TemporaryDirectory()
    run_dir = args.run or Path(tmp.name) / "run"
    extra = [x for o in args.overrides for x in ("--set", o)]
    started = time.perf_counter()
    summary = train(args.recipe, run_dir, args.minutes, extra)
    train_seconds = time.perf_counter() - started

    run = RunDir.open(run_dir)
    game = run.load_recipe().game
    store = CheckpointStore(run.checkpoints_path)
    latest = store.latest()
    spec = f"{run_dir}@{latest}"
    player = MatchPlayer(
        game, workers=args.eval_workers
    )  # games split over processes: evaluation uses every core

    def versus(a: str, b: str, games: int, seed: int) -> dict:
        outcomes = np.array(player(a, b, games, seed))
        wins, draws = int((outcomes == 1).sum()), int((outcomes == 0).sum())
        score = wins + 0.5 * draws
        return {
            "win_rate": score / games,
            "ci95": list(wilson_interval(score, games)),
            "games": games,
            "wins": wins,
            "draws": draws,
        }

    eval_started = time.perf_counter()
    final_versus = {
        opponent: versus(spec, opponent, args.games, 12345)
        for opponent in ("random", "bot:easy", "bot:medium")
    }

    # Learning curve: checkpoints spread over the run, by the wall time at which they were written.
    metrics = MetricsLog(run.metrics_path).read()
    wall_of_version = dict(
        zip(metrics.column("version").to_pylist(), metrics.column("wall_seconds").to_pylist(), strict=True)
    )
    chosen = curve_versions([v for v in store.versions() if v > 0], args.curve_points)
    if latest not in chosen:
        chosen.append(latest)
    player.close()
    league, _ = evaluate_run(
        run_dir, versions=",".join(map(str, chosen)), games=args.curve_games, workers=args.eval_workers
    )
    ratings = {row.name: row for row in league.leaderboard()}
    curve = []
    for v in chosen:
        r = versus(f"{run_dir}@{v}", "bot:easy", args.curve_games, 777)
        rating = ratings.get(f"v{v}")
        curve.append(
            {
                "version": v,
                "minutes": wall_of_version.get(v, float("nan")) / 60.0,
                "win_rate_vs_easy": r["win_rate"],
                "trueskill_mu": rating.mu if rating else None,
                "trueskill_sigma": rating.sigma if rating else None,
            }
        )
    player.close()
    latest_rating = ratings.get(f"v{latest}")
    out = {
        "minutes": args.minutes,
        "train_seconds": round(train_seconds, 1),
        "samples": summary["samples"],
        "version": latest,
        "versus": final_versus,
        "eval_seconds": round(time.perf_counter() - eval_started, 1),
        "trueskill": {
            "mu": latest_rating.mu if latest_rating else None,
            "sigma": latest_rating.sigma if latest_rating else None,
        },
        "curve": curve,
    }
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        minutes = np.array([c["minutes"] for c in curve])
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
        ax1.plot(minutes, [c["win_rate_vs_easy"] for c in curve], "o-")
        ax1.set(
            xlabel="training minutes (2 cores)",
            ylabel="win rate vs bot:easy",
            ylim=(0, 1),
            title="win rate against bot:easy",
        )
        mus = np.array([c["trueskill_mu"] if c["trueskill_mu"] is not None else np.nan for c in curve])
        sig = np.array([c["trueskill_sigma"] if c["trueskill_sigma"] is not None else np.nan for c in curve])
        ax2.errorbar(minutes, mus, yerr=sig, fmt="o-")
        ax2.set(xlabel="training minutes (2 cores)", ylabel="TrueSkill mu (random = 0)", title="TrueSkill")
        fig.tight_layout()
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.plot, dpi=100)
        out["plot"] = str(args.plot)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for name, v in final_versus.items():
            print(
                f"vs {name}: {v['win_rate']:.3f} [{v['ci95'][0]:.3f}, {v['ci95'][1]:.3f}] over {v['games']} games"
            )
        print(f"TrueSkill: {out['trueskill']}")


if __name__ == "__main__":
    main()
