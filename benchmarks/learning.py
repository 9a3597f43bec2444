"""Proof of learning: train a recipe (default: the quickstart) from scratch for M minutes, then measure the result.

    .venv/bin/python benchmarks/learning.py --minutes 30 --json --plot docs/learning_curve.png
    .venv/bin/python benchmarks/learning.py --recipe recipes/five-v-five-quick.toml --minutes 120 --json
    .venv/bin/python benchmarks/learning.py --recipe recipes/five-v-five-quick.toml --minutes 90 --json \
        --init-from QUICKSTART_RUN@latest     # a curriculum: 5v5 from a trained 1v1 network
    .venv/bin/python benchmarks/learning.py --recipe recipes/five-v-five-curriculum.toml --minutes 120 --json
                                          # the same in one recipe: its first stage, then the 5v5 run

Reports the latest version's win rate against ``random``, ``bot:easy`` and ``bot:medium`` (200 games each by
default, with Wilson 95% intervals; with a recipe that keeps a weight average, the average's, and the trained
weights' against the bots as ``versus_trained``) and its TrueSkill, plus a learning curve: win rate against
bot:easy and TrueSkill of checkpoints spread over the run, against wall-clock training time.
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


FINAL_OPPONENTS = ("random", "bot:easy", "bot:medium")
TRAINED_OPPONENTS = ("bot:easy", "bot:medium")  # the trained weights' games, when the run keeps an average


def versus(result: dict) -> dict:
    """The figures reported for one match (a ``MatchResult.to_dict()``), draws counting half."""
    return {
        "win_rate": result["a_win_rate"],
        "ci95": list(result["a_win_rate_ci95"]),
        "games": result["games"],
        "wins": result["a_wins"],
        "draws": result["draws"],
        # what the time-limit tiebreak compares, per game: the policy's, then the opponent's
        "building_hp_taken": [result.get("a_building_hp_mean", 0.0), result.get("b_building_hp_mean", 0.0)],
        "last_hits": [result["a_last_hits_mean"], result["b_last_hits_mean"]],
        # team play (games of two or more heroes a side, else None): the policy's, then the opponent's
        "grouped_kill_share": [result.get("a_grouped_kill_share"), result.get("b_grouped_kill_share")],
        "lanes_covered": [result.get("a_lanes_covered"), result.get("b_lanes_covered")],
        "home_share": [result.get("a_home_share"), result.get("b_home_share")],
    }


def evaluate(run_dir: Path, latest: int, chosen: list[int], args) -> tuple[list, list, dict, dict]:
    """Final games, curve games and the TrueSkill league; returns (final versus, curve versus, league summary,
    {"wall": seconds per stage, "cpu": CPU seconds per stage}).

    The league's matches wait on each other (each opponent is drawn from the rating the previous match left), so
    it runs on one core; with ``--eval-workers`` >= 2 it runs in its own process while this one plays the final
    and curve games, which do not depend on it (each stage as one batch: a policy runs one forward pass per step
    for all of its games).
    """
    import concurrent.futures as cf
    import multiprocessing as mp

    from fivectl.evaluate.run_eval import MatchPlayer, evaluate_run_job
    from fivectl.store.rundir import RunDir

    spec = f"{run_dir}@{latest}"
    recipe = RunDir.open(run_dir).load_recipe()
    final_matches = [(spec, opponent, args.games, 12345) for opponent in FINAL_OPPONENTS]
    if recipe.train.average_samples > 0:
        # the checkpoint holds a weight average (what ``spec`` plays) and the trained weights: these too
        final_matches += [(f"{spec}:trained", opponent, args.games, 12345) for opponent in TRAINED_OPPONENTS]
    curve_matches = [(f"{run_dir}@{v}", "bot:easy", args.curve_games, 777) for v in chosen]
    league_args = (str(run_dir), ",".join(map(str, chosen)), args.curve_games)
    stages: dict[str, float] = {}
    cpu_stages: dict[str, float] = {}
    player = MatchPlayer(recipe.game, workers=max(1, args.eval_workers - 1), batch=args.batch)

    def timed(name: str, matches: list) -> list[dict]:
        started, cpu = time.perf_counter(), time.process_time()
        results = [versus(r.to_dict()) for r in player.results(matches)]
        stages[name] = time.perf_counter() - started
        cpu_stages[name] = time.process_time() - cpu  # this process only (all of it with --eval-workers <= 2)
        return results

    with cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as background:
        league_job = background.submit(evaluate_run_job, *league_args) if args.eval_workers > 1 else None
        final = timed("final_games", final_matches)
        curve = timed("curve_games", curve_matches)
        waited = time.perf_counter()
        league = league_job.result() if league_job else evaluate_run_job(*league_args)
        stages["waiting_for_league"] = time.perf_counter() - waited if league_job else 0.0
    player.close()
    for part in ("calibration", "versions"):
        stages[f"league_{part}"] = league["seconds"][part]
        cpu_stages[f"league_{part}"] = league["cpu_seconds"][part]
    return final, curve, league, {"wall": stages, "cpu": cpu_stages}


def plot_curve(curve: list[dict], path: Path) -> None:
    """The win rate against easy and the TrueSkill rating against training minutes, as a PNG at ``path``
    (also from a saved result: ``plot_curve(json.load(f)["curve"], path)``)."""
    import matplotlib
    import numpy as np

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
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


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
        "--eval-workers",
        type=int,
        default=2,
        help="processes that play the evaluation games (2: the league in one, the other games in the other)",
    )
    parser.add_argument("--batch", type=int, default=256, help="game slots stepped together")
    parser.add_argument("--run", type=Path, default=None, help="keep the run here (default: a temp dir)")
    parser.add_argument("--plot", type=Path, default=None, help="write the learning curve PNG here")
    parser.add_argument(
        "--eval-only", action="store_true", help="do not train: evaluate the run given by --run as it is"
    )
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument(
        "--init-from", default=None, help="start the network from RUN@VERSION (fivectl train --init-from)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    from fivectl.store.checkpoint import CheckpointStore
    from fivectl.store.metrics import MetricsLog
    from fivectl.store.rundir import RunDir

    tmp = tempfile.TemporaryDirectory()
    run_dir = args.run or Path(tmp.name) / "run"
    if args.eval_only and args.run is None:
        parser.error("--eval-only needs --run")
    extra = [x for o in args.overrides for x in ("--set", o)]
    if args.init_from:
        extra += ["--init-from", args.init_from]
    started = time.perf_counter()
    summary = None if args.eval_only else train(args.recipe, run_dir, args.minutes, extra)
    train_seconds = time.perf_counter() - started
    if summary and summary.get("stage") == "first":
        raise SystemExit(f"the budget ended in the recipe's first stage ({summary['samples']:,} samples): no run to rate")

    run = RunDir.open(run_dir)
    metrics = MetricsLog(run.metrics_path).read()
    samples = summary["samples"] if summary else metrics.column("samples").to_pylist()[-1]
    store = CheckpointStore(run.checkpoints_path)
    latest = store.latest()
    # Learning curve: checkpoints spread over the run, by the wall time at which they were written.
    # (version 0 too when it is another run's network: where the curve starts)
    first = 0 if run.meta.get("init_from") else 1
    chosen = curve_versions([v for v in store.versions() if v >= first], args.curve_points)
    if latest not in chosen:
        chosen.append(latest)

    eval_started = time.perf_counter()
    final, curve_results, league, stages = evaluate(run_dir, latest, chosen, args)
    eval_seconds = time.perf_counter() - eval_started

    wall_of_version = dict(
        zip(metrics.column("version").to_pylist(), metrics.column("wall_seconds").to_pylist(), strict=True)
    )
    ratings = {row["name"]: row for row in league["leaderboard"]}
    curve = []
    for v, r in zip(chosen, curve_results, strict=True):
        rating = ratings.get(f"v{v}")
        curve.append(
            {
                "version": v,
                "minutes": wall_of_version.get(v, float("nan")) / 60.0,
                "win_rate_vs_easy": r["win_rate"],
                "trueskill_mu": rating["mu"] if rating else None,
                "trueskill_sigma": rating["sigma"] if rating else None,
            }
        )
    latest_rating = ratings.get(f"v{latest}")
    out = {
        "minutes": args.minutes,
        "train_seconds": round(train_seconds, 1),
        "samples": samples,
        # a recipe with a [curriculum] first stage: the stage's summary (samples, wall seconds, ...)
        "first_stage": summary.get("first_stage") if summary else None,
        "version": latest,
        "versus": dict(zip(FINAL_OPPONENTS, final[: len(FINAL_OPPONENTS)], strict=True)),
        "eval_seconds": round(eval_seconds, 1),
        "eval_stage_seconds": {k: round(v, 1) for k, v in stages["wall"].items()},
        "eval_stage_cpu_seconds": {k: round(v, 1) for k, v in stages["cpu"].items()},
        "eval_workers": args.eval_workers,
        "trueskill": {
            "mu": latest_rating["mu"] if latest_rating else None,
            "sigma": latest_rating["sigma"] if latest_rating else None,
        },
        "curve": curve,
    }
    if len(final) > len(FINAL_OPPONENTS):
        out["versus_trained"] = dict(zip(TRAINED_OPPONENTS, final[len(FINAL_OPPONENTS) :], strict=True))
    if args.plot:
        plot_curve(curve, args.plot)
        out["plot"] = str(args.plot)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for label, versus_of in (("", out["versus"]), ("trained weights ", out.get("versus_trained", {}))):
            for name, v in versus_of.items():
                print(
                    f"{label}vs {name}: {v['win_rate']:.3f} [{v['ci95'][0]:.3f}, {v['ci95'][1]:.3f}] "
                    f"over {v['games']} games"
                )
        print(f"TrueSkill: {out['trueskill']}")
        print(f"evaluation: {out['eval_seconds']} s {out['eval_stage_seconds']}")


if __name__ == "__main__":
    main()
