"""How long ``fivectl surgery`` takes on a paper-scale model and on the quickstart with a 60-version pool.

1. Paper scale (``recipes/paper-scale.toml``, ~159M parameters): a synthetic run with one checkpoint (random
   weights and Adam moments, as a trained run would hold), then ``add-obs`` to a superset schema and ``widen
   --lstm`` of it, each timed from reading the parent to the renamed child directory (save included).
   Goal: <= 60 s each on a 2-core machine.
2. The quickstart with 60 versions in the opponent pool (59 slimmed pool members + the full latest version),
   then ``widen --lstm 192`` and ``add-obs``. Goal: <= 10 s.

The superset schema is schema v3 when it exists, else v2 plus fields the game can encode (written to a temporary
schemas directory). Runs go to a temporary directory (``--dir`` to choose).

    .venv/bin/python benchmarks/surgery.py --json [--skip-paper] [--skip-quickstart]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
import tomllib
from pathlib import Path

import tomli_w
import torch
from _machine import cpu_model

from fivectl.config import load_recipe
from fivectl.config.loader import to_dict
from fivectl.model import PolicyNet
from fivectl.rl.optim import ClippedAdam
from fivectl.schema.spec import available_versions, load_schema, schemas_dir
from fivectl.selfplay import OpponentPool
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.rundir import RunDir
from fivectl.store.state_codec import flatten_state
from fivectl.surgery.add_obs import plan_add_obs
from fivectl.surgery.calibrate import calibrate_columns
from fivectl.surgery.run import operate
from fivectl.surgery.widen import plan_widen

REPO = Path(__file__).resolve().parents[1]
EXTRA = {  # fields the encoder computes that v2 lacks: a superset the calibration can play
    "self": [{"name": "ability_cooldowns", "shape": [4]}, {"name": "item_ids", "kind": "categorical", "shape": [6], "vocab": 16}],
    "heroes": [{"name": "move_speed"}, {"name": "buffed", "kind": "bool"}],
}


def superset_version(tmp: Path) -> int:
    """3 if ``schemas/obs/v3.toml`` exists, else a v2 superset installed as v90 in a temporary schemas dir."""
    if 3 in available_versions():
        return 3
    root = tmp / "schemas"
    (root / "obs").mkdir(parents=True)
    for p in (schemas_dir() / "obs").glob("v*.toml"):
        (root / "obs" / p.name).write_text(p.read_text())
    d = tomllib.loads((schemas_dir() / "obs" / "v2.toml").read_text())
    d["version"] = 90
    for g in d["groups"]:
        g["fields"].extend(EXTRA.get(g["name"], []))
    (root / "obs" / "v90.toml").write_text(tomli_w.dumps(d))
    os.environ["FIVECTL_SCHEMAS"] = str(root)
    return 90


def synthetic_run(path: Path, recipe_path: Path, versions: int, seed: int = 0) -> float:
    """A run with ``versions`` checkpoints: all in the opponent pool and model-only but the last, which has
    Adam moments from one step on random gradients. Returns the seconds it took."""
    t0 = time.perf_counter()
    recipe = load_recipe(recipe_path)
    schema = load_schema(recipe.model.schema_version)
    torch.manual_seed(seed)
    net = PolicyNet(schema, recipe.model, recipe.game.team_size)
    run = RunDir.create(path, recipe, recipe_source=str(recipe_path))
    store = CheckpointStore(run.checkpoints_path)
    pool = OpponentPool(recipe.selfplay)
    model = {k: v.detach().numpy() for k, v in net.state_dict().items()}
    base = {
        "schema_version": schema.version,
        "schema": schema.to_json(),
        "model_config": to_dict(recipe.model),
        "game_config": to_dict(recipe.game),
        "team_size": recipe.game.team_size,
        "model_keys": list(model),
        "recipe_name": recipe.name,
    }
    for v in range(1, versions + 1):
        counters = {"version": v, "iteration": v, "samples": 1000 * v, "warmup_end_version": 0}
        attrs = {**base, "counters": counters, "opponent_pool": pool.state_dict()}
        arrays = {"model": model}
        if v == versions:
            optimizer = ClippedAdam(net.parameters())
            for p in net.parameters():
                p.grad = torch.randn_like(p)
            optimizer.step()
            arrays["optimizer"], attrs["optimizer_meta"] = flatten_state(
                {"optimizer": optimizer.state_dict(), "gradient_steps": 1}
            )
            del optimizer
        store.save(v, arrays, attrs)
        pool.add(v)
    return time.perf_counter() - t0


def timed_surgery(parent: Path, out: Path, build) -> dict:
    t0, cpu0 = time.perf_counter(), time.process_time()
    result = operate(str(parent), out, build)
    return {
        "seconds": round(time.perf_counter() - t0, 2),
        "cpu_seconds": round(time.process_time() - cpu0, 2),  # this process's CPU: stabler on a shared machine
        "versions": len(result.versions),
        "parameters_before": result.parameters_before,
        "parameters_after": result.parameters_after,
        "bytes_written": sum(p.stat().st_size for p in out.rglob("*") if p.is_file()),
    }


def add_obs(version: int):
    """As ``fivectl surgery add-obs`` does it: new columns calibrated on 8 short bot games."""
    new = load_schema(version)

    def build(p):
        stats = calibrate_columns(new, p.recipe.game, games=8)
        return plan_add_obs(p.schema, new, p.model, p.team_size, new_label=f"v{version}", calibration=stats)

    return build


def widen(**sizes):
    return lambda p: plan_widen(p.schema, p.model, p.team_size, **sizes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--dir", type=Path, default=None, help="where the runs are written (default: a temp dir)")
    ap.add_argument("--skip-paper", action="store_true")
    ap.add_argument("--skip-quickstart", action="store_true")
    ap.add_argument("--pool", type=int, default=60)
    args = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp_name:
        tmp = Path(tmp_name)
        superset = superset_version(tmp)
        results: dict = {"superset_schema": superset, "machine": cpu_model()}
        if not args.skip_quickstart:
            parent = tmp / "quickstart"
            made = synthetic_run(parent, REPO / "recipes" / "quickstart.toml", args.pool)
            results["quickstart"] = {
                "pool": args.pool,
                "make_parent_s": round(made, 2),
                "widen_lstm_192": timed_surgery(parent, tmp / "qs-wide", widen(lstm=192)),
                "add_obs": timed_surgery(parent, tmp / "qs-obs", add_obs(superset)),
                "goal_s": 10,
            }
        if not args.skip_paper:
            parent = tmp / "paper"
            made = synthetic_run(parent, REPO / "recipes" / "paper-scale.toml", 1)
            results["paper_scale"] = {"make_parent_s": round(made, 2)}
            results["paper_scale"]["add_obs"] = timed_surgery(parent, tmp / "paper-obs", add_obs(superset))
            shutil.rmtree(tmp / "paper-obs")  # the disk holds one paper-scale child at a time
            results["paper_scale"]["widen_lstm_4352"] = timed_surgery(parent, tmp / "paper-wide", widen(lstm=4352))
            results["paper_scale"]["goal_s"] = 60
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for key, value in results.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
