"""Draft speed: precompute of the 5v5 lineups at recipes/five-v-five.toml's model size, and an advise query.

Precompute rates lineups in batches: the game builds the first-frame observations of both teams (``set_lineups``
+ one batched reset and encode), then the network's first step runs with a zero LSTM state. The two parts are
timed separately on the first ``--limit`` lineups and the time of all 4,900,896 is **extrapolated** (the full
run takes too long for a shared machine); the report says which part bounds it. The model is an untrained
network of the recipe's size on schema v3 (speed does not depend on the weights).

The advise query is timed on a table of random values of the full 5v5 size: from an empty draft (the whole
1-2-2-2-2-1 tree) and after 1 and 3 picks.

    .venv/bin/python benchmarks/draft.py --json [--limit 8192] [--batch 1024] [--lane-samples 1]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from fivectl.config import load_recipe
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


def time_advise() -> dict:
    space = LineupSpace(range(17), 5)
    values = np.random.default_rng(0).random(space.size).astype(np.float32)
    table = DraftTable(Path("random"), {"pool": list(range(17)), "team_size": 5}, values, np.ones(1, dtype=bool))
    warm = Drafter(table, parse_order("1-2-2-2-2-1", 5))
    warm.advise(DraftState(([0, 1, 2], [3, 4]), []))  # compile the search
    t0 = time.perf_counter()
    solved = warm.solve_all()  # what precompute stores with a finished table
    out = {"solve_whole_draft_s (once, stored by precompute)": time.perf_counter() - t0}
    cases = (("empty_draft", ([], [])), ("after_1_pick", ([0], [])), ("after_3_picks", ([0], [5, 9])))
    for stored in (True, False):
        for name, teams in cases:
            drafter = Drafter(table, parse_order("1-2-2-2-2-1", 5))
            drafter.cache = solved if stored else None
            t0 = time.perf_counter()
            drafter.advise(DraftState(teams, []))
            out[f"advise_s_{name}_{'stored' if stored else 'searched'}"] = time.perf_counter() - t0
    out["goal_s"] = 1.0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=8192, help="lineups timed (the rest is extrapolated)")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--lane-samples", type=int, default=1, help="lane assignments averaged per lineup")
    ap.add_argument("--schema", type=int, default=3)
    ap.add_argument("--skip-advise", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    model = five_v_five_model(args.schema)
    result = {
        "model": {"fc_size": model.net.cfg.fc_size, "lstm_size": model.net.cfg.lstm_size,
                  "params": sum(p.numel() for p in model.net.parameters())},  # fmt: skip
        "precompute": time_precompute(model, args.limit, args.batch, args.lane_samples),
    }
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
