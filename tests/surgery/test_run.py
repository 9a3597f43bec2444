"""Surgery on whole runs: every kept version and the opponent pool, lineage, the parent untouched, bad input,
kill -9 in the middle."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from surgery_helpers import invoke, run_json

from fivectl.evaluate.policy_agent import load_policy
from fivectl.model.synthetic import random_obs
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.rundir import RunDir


def tree_digest(root: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    for p in sorted(root.rglob("*")):
        h.update(str(p.relative_to(root)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def same_function(parent_net, child_net, seed: int = 0) -> float:
    obs = random_obs(parent_net.schema, (4, 2), torch.Generator().manual_seed(seed))
    first = torch.zeros(4, 2, dtype=torch.bool)
    first[0] = True
    actions = torch.zeros(4, 2, 4, dtype=torch.long)
    with torch.no_grad():
        a = parent_net.evaluate(obs, actions, parent_net.initial_state(2), first)
        b = child_net.evaluate(obs, actions, child_net.initial_state(2), first)
    return max(float((a.logprob - b.logprob).abs().max()), float((a.value - b.value).abs().max()))


def test_every_kept_version_and_the_pool_get_the_same_surgery(parent_run, tmp_path):
    before = tree_digest(parent_run)
    out = tmp_path / "wide"
    result = invoke("surgery", "widen", str(parent_run), "--lstm", "24", "--unit-hidden", "20", "--out", str(out), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    parent_store, child_store = CheckpointStore(parent_run / "checkpoints.zarr"), CheckpointStore(out / "checkpoints.zarr")
    assert child_store.versions() == parent_store.versions() == report["versions"]
    pool = child_store.load().attrs["opponent_pool"]["versions"]
    assert pool and pool == parent_store.load().attrs["opponent_pool"]["versions"]
    for v in child_store.versions():  # the pool's members and the rest: all wider, all the same function
        child_net, attrs, _ = load_policy(out, v)
        parent_net, _, _ = load_policy(parent_run, v)
        assert attrs["model_config"]["lstm_size"] == 24 and child_net.lstm.hidden_size == 24
        assert same_function(parent_net, child_net, seed=v) <= 1e-5
    assert tree_digest(parent_run) == before  # the parent is never modified
    recipe = RunDir.open(out).load_recipe()
    # a rollout worker of the child loads every pool member as its opponent network (it falls back to the
    # latest parameters, silently, on a version it cannot load)
    from fivectl.runtime.opponents import OpponentSet
    from fivectl.schema import load_schema

    opponents = OpponentSet(recipe, load_schema(2), out, games=2, rng=np.random.default_rng(0))
    assert all(opponents.net(v) is not None for v in pool) and opponents.missing == 0
    assert recipe.model.lstm_size == 24 and recipe.model.unit_hidden == 20
    assert report["parameters_after"] > report["parameters_before"]
    changed = {row["name"]: row for row in report["changed"]}
    assert changed["lstm.weight_hh_l0"]["before"] == [64, 16] and changed["lstm.weight_hh_l0"]["after"] == [96, 24]


def test_lineage_records_the_chain_of_surgeries(parent_run, tmp_path, schemas_dir):
    wide, more = tmp_path / "wide", tmp_path / "more"
    assert invoke("surgery", "widen", str(parent_run) + "@3", "--fc", "40", "--out", str(wide)).exit_code == 0
    result = invoke("surgery", "add-obs", str(wide), "--schema", "9", "--out", str(more), "--calibrate-games", "2")
    assert result.exit_code == 0, result.output
    lineage = run_json(more)["lineage"]
    assert [e["operation"] for e in lineage] == ["widen", "add-obs"]
    first, second = lineage
    assert first["parent_version"] == 3 and first["args"] == {"fc": 40}
    assert (more / first["parent_run"]).resolve() == parent_run.resolve()  # paths stay relative to this run
    assert (more / second["parent_run"]).resolve() == wide.resolve()
    assert second["schema_before"]["version"] == 2 and second["schema_after"]["version"] == 9
    assert "self.ability_cooldowns" in second["args"]["added"]
    assert second["parameters_after"] > second["parameters_before"] == first["parameters_after"]
    assert second["time"] and second["versions_converted"] == CheckpointStore(more / "checkpoints.zarr").versions()
    assert max(second["versions_converted"]) == 3  # the operated version of the first surgery
    assert RunDir.open(more).load_recipe().model.schema_version == 9
    shown = invoke("runs", "show", str(more))
    assert shown.exit_code == 0, shown.output
    chain = shown.stdout.split("lineage:")[1].splitlines()[1:3]
    assert "parent@3 -> widen --fc 40 -> v3" in chain[0] and "wide@3 -> add-obs" in chain[1]
    assert "schema v2 -> v9" in chain[1]
    from fivectl.store.metrics import MetricsLog

    iterations = MetricsLog(more / "metrics").read().column("iteration").to_pylist()
    assert max(iterations) == CheckpointStore(more / "checkpoints.zarr").load().attrs["counters"]["iteration"]
    # "wide" never trained, so it has no rollouts: verify replays the original run's, encoded for v2
    verified = invoke("surgery", "verify", str(more), "--json")
    assert verified.exit_code == 0, verified.output
    assert json.loads(verified.stdout)["ok"] and json.loads(verified.stdout)["fragments"] >= 1


def test_add_obs_calibrates_new_columns_per_column(parent_run, tmp_path, schemas_dir):
    out = tmp_path / "obs"
    assert invoke("surgery", "add-obs", str(parent_run), "--schema", "9", "--out", str(out)).exit_code == 0
    state = CheckpointStore(out / "checkpoints.zarr").load().arrays["model"]
    parent = CheckpointStore(parent_run / "checkpoints.zarr").load().arrays["model"]
    from fivectl.schema import load_schema

    cols = load_schema(9).group("heroes").float_columns()["move_speed"]
    mean, var = state["encoder.norms.heroes.mean"][cols], state["encoder.norms.heroes.var"][cols]
    assert 0.1 < float(mean[0]) < 1.0 and 0 < float(var[0]) < 1  # hero move speeds, thousands of units/s, not the prior
    old_cols = load_schema(2).group("heroes").float_columns()["hp"]
    new_cols = load_schema(9).group("heroes").float_columns()["hp"]
    assert state["encoder.norms.heroes.mean"][new_cols] == parent["encoder.norms.heroes.mean"][old_cols]
    # counts per column: the old columns keep the parent's, the new one counts only its calibration rows
    counts = state["encoder.norms.heroes.count"]
    assert counts[new_cols] == parent["encoder.norms.heroes.count"].max() > 0
    assert 0 < counts[cols][0] != counts[new_cols][0]


def bad(*args: str) -> str:
    result = invoke("surgery", *args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    return lines[0]


def test_bad_input_is_one_line_exit_2_and_writes_nothing(parent_run, tmp_path, schemas_dir):
    out = tmp_path / "out"
    before = tree_digest(parent_run)
    assert "did you mean self.buyback_cost" in bad("retire", str(parent_run), "--field", "self.buyback_cots", "--out", str(out))
    assert "narrower" in bad("widen", str(parent_run), "--lstm", "8", "--out", str(out))
    assert "does not exist" in bad("add-obs", str(parent_run), "--schema", "42", "--out", str(out))
    not_superset = tmp_path / "sub.toml"
    text = (schemas_dir / "obs" / "v9.toml").read_text().replace('name = "buyback_cost"', 'name = "buyback_price"')
    not_superset.write_text(text)
    message = bad("add-obs", str(parent_run), "--schema", str(not_superset), "--out", str(out))
    assert "not a superset" in message and "did you mean self.buyback_price" in message
    assert "no checkpoint v99" in bad("widen", str(parent_run) + "@99", "--fc", "64", "--out", str(out))
    empty = tmp_path / "empty"
    RunDir.create(empty, RunDir.open(parent_run).load_recipe())
    assert "no checkpoints" in bad("widen", str(empty), "--fc", "64", "--out", str(out))
    out.mkdir()
    assert "already exists" in bad("widen", str(parent_run), "--fc", "64", "--out", str(out))
    out.rmdir()
    assert "not a fivectl run" in bad("widen", str(tmp_path), "--fc", "64", "--out", str(out))
    assert not out.exists() and not list(tmp_path.glob(".out*"))
    assert tree_digest(parent_run) == before


def test_an_unconvertible_pool_version_is_an_error_before_anything_is_written(parent_run, tmp_path):
    store = CheckpointStore(parent_run / "checkpoints.zarr")
    pool = store.load().attrs["opponent_pool"]["versions"]
    victim = parent_run / "checkpoints.zarr" / f"v{pool[0]:08d}"
    shutil.rmtree(victim)
    out = tmp_path / "out"
    assert f"v{pool[0]} is not among the run's checkpoints" in bad("widen", str(parent_run), "--fc", "64", "--out", str(out))
    assert not out.exists() and not list(tmp_path.glob(".out*"))


def test_kill_during_a_surgery_leaves_the_parent_and_no_complete_looking_out(parent_run, tmp_path):
    before = tree_digest(parent_run)
    out = tmp_path / "child"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "fivectl.cli.main", "surgery", "widen", str(parent_run), "--lstm", "32", "--out", str(out)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    staged = []
    while time.monotonic() < deadline and proc.poll() is None:
        staged = list(tmp_path.glob(".child.surgery-*/checkpoints.zarr/v*"))
        if staged:  # it is writing the converted checkpoints: now
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.005)
    proc.wait(timeout=60)
    assert staged, "the surgery finished before it could be killed"
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists()  # no --out that looks complete: only a hidden stage
    assert tree_digest(parent_run) == before
    # the next surgery to the same --out removes the leftover and completes
    result = invoke("surgery", "widen", str(parent_run), "--lstm", "32", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert not list(tmp_path.glob(".child.surgery-*"))
    assert CheckpointStore(out / "checkpoints.zarr").versions() == CheckpointStore(parent_run / "checkpoints.zarr").versions()


@pytest.mark.parametrize("op", ["widen", "retire"])
def test_verify_reports_exactness_or_drift(parent_run, tmp_path, op):
    out = tmp_path / "child"
    args = ["--lstm", "20"] if op == "widen" else ["--field", "heroes.hp", "--constant", "500"]
    assert invoke("surgery", op, str(parent_run), *args, "--out", str(out)).exit_code == 0
    result = invoke("surgery", "verify", str(out), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["fragments"] >= 1 and report["samples"] > 0
    if op == "widen":
        assert report["tolerance"] == 1e-5 and max(report["max_abs_delta"].values()) <= 1e-5
    else:
        assert report["tolerance"] is None and report["max_abs_delta"]["logprob"] > 0  # hp is not 500 in play
    # compared with another version of the parent, the difference is real and exit 1 says so
    other = invoke("surgery", "verify", str(out), "--against", f"{parent_run}@1", "--json")
    if op == "widen":
        assert other.exit_code == 1 and json.loads(other.stdout)["ok"] is False


def test_verify_needs_a_parent_and_good_counts(parent_run, tmp_path):
    assert "not made by a surgery" in bad("verify", str(parent_run))
    out = tmp_path / "child"
    assert invoke("surgery", "widen", str(parent_run), "--fc", "40", "--out", str(out)).exit_code == 0
    for flag in ("--games", "--steps", "--fragments"):
        assert flag in bad("verify", str(out), flag, "0")


def sabotage(run: Path, version: int) -> None:
    """Nudge one weight of a checkpoint (saved again under its own number): no longer the parent's function."""
    store = CheckpointStore(run / "checkpoints.zarr")
    ckpt = store.load(version)
    arrays = {section: {k: np.array(v) for k, v in named.items()} for section, named in ckpt.arrays.items()}
    arrays["model"]["heads.value.weight"] += 0.05
    store.save(version, arrays, {k: v for k, v in ckpt.attrs.items() if not k.startswith("__")})


def test_verify_plays_fresh_games_when_the_parent_kept_no_rollouts(parent_run, tmp_path):
    # a short run keeps one fragment in train.rollout_save_every: it may have none to replay
    shutil.rmtree(parent_run / "rollouts")
    out = tmp_path / "child"
    assert invoke("surgery", "widen", str(parent_run), "--fc", "40", "--lstm", "20", "--out", str(out)).exit_code == 0
    parent_version = run_json(out)["lineage"][-1]["parent_version"]
    text = invoke("surgery", "verify", str(out), "--games", "2", "--steps", "80")
    assert text.exit_code == 0, text.output
    assert f"played 2 fresh games with the parent (v{parent_version}) for 320 observations" in text.stdout
    assert "no recorded rollouts" in text.stdout and "within 1e-05" in text.stdout
    report = json.loads(invoke("surgery", "verify", str(out), "--games", "2", "--steps", "80", "--json").stdout)
    assert report["source"] == "fresh games" and report["fresh_games"] == {"games": 2, "steps": 80}
    assert report["fragments"] == 2 and report["samples"] == 2 * 2 * 80  # 1v1: two heroes a game
    assert report["ok"] and max(report["max_abs_delta"].values()) <= 1e-5
    # a child whose function changed is caught on the fresh games too
    sabotage(out, report["child_version"])
    broken = invoke("surgery", "verify", str(out), "--games", "2", "--steps", "80", "--json")
    assert broken.exit_code == 1, broken.output
    found = json.loads(broken.stdout)
    assert found["ok"] is False and found["source"] == "fresh games" and found["max_abs_delta"]["value"] > 1e-3


def test_the_weight_average_gets_the_same_surgery_in_every_version(tmp_path):
    from surgery_helpers import TINY_RUN

    recipe = tmp_path / "tiny.toml"
    recipe.write_text(TINY_RUN)
    parent = tmp_path / "parent"
    trained = invoke(
        "train", str(recipe), "--run", str(parent), "--workers", "0", "--max-samples", "300",
        "--set", "train.average_samples=100", "--json",
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    out = tmp_path / "wide"
    result = invoke("surgery", "widen", str(parent), "--lstm", "24", "--out", str(out), "--json")
    assert result.exit_code == 0, result.output
    store = CheckpointStore(out / "checkpoints.zarr")
    assert any(i.slim for i in CheckpointStore(parent / "checkpoints.zarr").info())  # these keep their average
    for v in store.versions():
        child_average, attrs, _ = load_policy(out, v, "average")
        parent_average, _, _ = load_policy(parent, v, "average")
        child_trained, _, _ = load_policy(out, v, "trained")
        assert attrs["model_config"]["lstm_size"] == 24 and child_average.lstm.hidden_size == 24
        assert same_function(parent_average, child_average, seed=v) <= 1e-5
        if v > 0:
            assert same_function(child_trained, child_average, seed=v) > 1e-5
