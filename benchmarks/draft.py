"""Draft speed: precompute of the 5v5 lineups at recipes/five-v-five.toml's model size, and an advise query.

Precompute, both ways in the same run on the same first ``--limit`` lineups:

- ``direct`` (``FirstFrame``): the game builds the first-frame observations of both teams (``set_lineups`` + one
  batched reset and encode), then the network's first step runs with a zero LSTM state; the two parts are timed
  separately and the report says which bounds it;
- ``factored`` (``FactoredFirstFrame``): the lineup-independent part once per (side, team, slot) -- its setup is
  timed on its own -- then per lineup only the lineup-dependent layers; its largest difference to ``direct`` on
  the first batch is reported.

The time of all 4,900,896 lineups is **extrapolated** (setup + per-lineup time x lineups; the full run takes too
long for a shared machine). The model is an untrained network of the recipe's size on schema v3 (speed does not
depend on the weights).

The advise query is timed on a table of random values of the full 5v5 size: from an empty draft (the whole
1-2-2-2-2-1 tree) and after 1, 2 and 3 picks, with the stored solution and searched (bans, another order or
expectimax), wall and CPU seconds.

    .venv/bin/python benchmarks/draft.py --json [--limit 8192] [--batch 1024] [--lane-samples 1] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from _machine import cpu_model

from fivectl.config import load_recipe
from fivectl.draft.factored import FactoredFirstFrame
from fivectl.draft.lineups import LineupSpace
from fivectl.draft.model import DraftModel, FirstFrame
from fivectl.draft.search import Drafter, DraftState, parse_order
from fivectl.draft.table import DraftTable
from fivectl.model import PolicyNet
from fivectl.schema import load_schema

REPO = Path(__file__).resolve().parents[1]


def five_v_five_model(schema_version: int) -> DraftModel:
    recipe = load_recipe(REPO / "recipes" / "five-v-five.toml")
    schema = load_schema(schema_version)
    cfg = replace(recipe.model, schema_version=schema_version)
    torch.manual_seed(0)
    net = PolicyNet(schema, cfg, recipe.game.team_size).eval()
    return DraftModel("bench@0", "bench", 0, net, schema, recipe.game)


def time_precompute(model: DraftModel, limit: int, batch: int, lane_samples: int) -> dict:
    """Seconds per lineup of observation building and of the forward pass, over the first ``limit`` lineups."""
    space = LineupSpace(range(17), model.team_size)
    rater = FirstFrame(model, batch, 0, lane_samples)
    rater.win_probs(space.lineups(0, min(batch, space.size)))  # warm-up (numba, torch)
    env, net, k = rater.env, model.net, model.team_size
    obs_s = fwd_s = 0.0
    done = 0
    while done < limit:
        lineups = space.lineups(done, done + batch)
        for sample in range(rater.lane_samples):
            t0 = time.perf_counter()
            env.set_lineups(lineups)
            env.seed = sample
            obs = env.reset()
            flat = {key: torch.from_numpy(np.ascontiguousarray(v.reshape(batch * 2 * k, *v.shape[2:])))
                    for key, v in obs.items()}  # fmt: skip
            t1 = time.perf_counter()
            with torch.inference_mode():
                net.act(flat, rater.state, rater.first).win_prob.numpy()
            fwd_s += time.perf_counter() - t1
            obs_s += t1 - t0
        done += batch
    per_lineup = (obs_s + fwd_s) / done
    return {
        "lineups_timed": done,
        "batch": batch,
        "lane_samples": rater.lane_samples,
        "obs_us_per_lineup": 1e6 * obs_s / done,
        "forward_us_per_lineup": 1e6 * fwd_s / done,
        "bound_by": "forward pass" if fwd_s > obs_s else "observation building",
        "extrapolated_full_5v5_minutes": per_lineup * space.size / 60.0,
        "goal_minutes": 10.0,
    }


def time_factored(model: DraftModel, limit: int, batch: int, lane_samples: int) -> dict:
    """Setup seconds and seconds per lineup of the factored path over the same lineups as ``time_precompute``."""
    space = LineupSpace(range(17), model.team_size)
    t0 = time.perf_counter()
    rater = FactoredFirstFrame(model, space, batch, 0, lane_samples)
    setup_s = time.perf_counter() - t0
    max_diff = rater.check(space.lineups(0, batch))  # also the warm-up
    done, t0 = 0, time.perf_counter()
    while done < limit:
        rater.win_probs(space.lineups(done, done + batch))
        done += batch
    per_lineup = (time.perf_counter() - t0) / done
    return {
        "lineups_timed": done,
        "setup_s (once per table: every team on either side)": setup_s,
        "us_per_lineup": 1e6 * per_lineup,
        "max_abs_diff_to_direct (first batch)": max_diff,
        "extrapolated_full_5v5_minutes": (setup_s + per_lineup * space.size) / 60.0,
        "goal_minutes": 10.0,
    }


def timed(fn) -> dict:
    """Wall seconds and CPU seconds of this process: on a shared machine the CPU time says what a query costs."""
    w, c = time.perf_counter(), time.process_time()
    fn()
    return {"wall": time.perf_counter() - w, "cpu": time.process_time() - c}


def time_advise() -> dict:
    """Advise queries on a random table of the full 5v5 size: with the stored solution, and searched (a fresh
    Drafter: bans, another order or expectimax) -- the first query of a draft and the next one of the same draft."""
    space = LineupSpace(range(17), 5)
    values = np.random.default_rng(0).random(space.size).astype(np.float32)
    table = DraftTable(Path("random"), {"pool": list(range(17)), "team_size": 5}, values, np.ones(1, dtype=bool))
    order = parse_order("1-2-2-2-2-1", 5)
    warm = Drafter(table, order)
    warm.advise(DraftState(([0, 1, 2], [3, 4]), []))  # compile the search
    warm.advise(DraftState(([], []), [16]))  # and the bottom-up fill
    out = {"solve_whole_draft_s (stored by precompute)": timed(warm.solve_all)}
    solved = warm.solve_all()
    cases = (
        ("empty_draft", ([], []), []),
        ("after_1_pick", ([0], []), []),
        ("after_2_picks", ([0], [5]), []),
        ("after_3_picks", ([0], [5, 9]), []),
        ("empty_draft_2_bans", ([], []), [15, 16]),
    )
    for stored in (True, False):
        for name, teams, bans in cases:
            if stored and bans:
                continue
            drafter = Drafter(table, order)
            drafter.cache = solved if stored else None
            key = f"advise_s_{name}_{'stored' if stored else 'searched'}"
            out[key] = timed(lambda d=drafter, t=teams, b=bans: d.advise(DraftState(t, b)))
    drafter = Drafter(table, order, mode="expectimax")
    out["advise_s_empty_draft_expectimax"] = timed(lambda: drafter.advise(DraftState(([], []), [])))
    drafter = Drafter(table, order)
    drafter.cache = None
    drafter.advise(DraftState(([], []), [15, 16]))
    out["advise_s_second_query_same_draft_2_bans"] = timed(lambda: drafter.advise(DraftState(([0], []), [15, 16])))
    out["goal_s"] = 1.0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=8192, help="lineups timed (the rest is extrapolated)")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--lane-samples", type=int, default=1, help="lane assignments averaged per lineup")
    ap.add_argument("--schema", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (the CLI: every core, --threads)")
    ap.add_argument("--skip-direct", action="store_true", help="time only the factored path")
    ap.add_argument("--skip-advise", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = five_v_five_model(args.schema)
    result = {
        "model": {"fc_size": model.net.cfg.fc_size, "lstm_size": model.net.cfg.lstm_size,
                  "params": sum(p.numel() for p in model.net.parameters())},  # fmt: skip
        "cpu": cpu_model(),
        "torch_threads": args.threads,
        "load_average_at_start": list(os.getloadavg()),
    }
    if not args.skip_direct:
        result["precompute"] = time_precompute(model, args.limit, args.batch, args.lane_samples)
    result["precompute_factored"] = time_factored(model, args.limit, args.batch, args.lane_samples)
    if not args.skip_direct:
        direct = result["precompute"]["extrapolated_full_5v5_minutes"]
        result["speedup_full_table"] = direct / result["precompute_factored"]["extrapolated_full_5v5_minutes"]
    result["load_average_at_end"] = list(os.getloadavg())
    if not args.skip_advise:
        result["advise"] = time_advise()
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for section, figures in result.items():
            print(section, figures)


if __name__ == "__main__":
    main()
