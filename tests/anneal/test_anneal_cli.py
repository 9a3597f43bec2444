"""``fivectl anneal`` end to end on a tiny run: list, bad inputs (one line, exit 2, nothing written), and an
anneal of the canary that the guard reverts, through a kill -9 and an exact resume, then status, plot, stop."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from shared_helpers import assert_bad_input
from typer.testing import CliRunner

from fivectl.cli.main import app
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.metrics import MetricsLog
from fivectl.store.rollouts import read_rollouts

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def snapshot(run: Path) -> tuple[bytes, bytes]:
    return (run / "recipe.toml").read_bytes(), (run / "run.json").read_bytes()


def test_list_shows_the_registry_with_docs():
    table = invoke("anneal", "list")
    assert table.exit_code == 0
    for name in ("fast-waves", "canary-mirror", "canary-swapped-credit", "storm-maul"):
        assert name in table.output
    assert "item4" in table.output and "known to hurt" in table.output
    listed = json.loads(invoke("anneal", "list", "--json").output)
    canary = next(c for c in listed if c["name"] == "canary-swapped-credit")
    assert canary["kind"] == "canary" and canary["doc"]
    assert next(c for c in listed if c["name"] == "storm-maul")["needs_action"] == "item4"


def test_bad_inputs_are_one_line_exit_2_and_write_nothing(run):
    every = ["--set", "eval.every_versions=3"]
    before = snapshot(run)
    assert_bad_input(
        invoke("anneal", "start", run, "--change", "canary-mirrr", *every), "did you mean canary-mirror"
    )
    assert_bad_input(
        invoke("anneal", "start", run, "--change", "storm-maul", *every),
        "fivectl surgery add-action",
        "item4",
    )
    assert_bad_input(
        invoke("anneal", "start", run, "--change", "fast-waves", "--over", "-5", *every), "--over"
    )
    assert_bad_input(
        invoke("anneal", "start", run, "--change", "fast-waves", "--set", "game.lanes=3", *every), "surgery"
    )
    assert_bad_input(invoke("anneal", "stop", run, "--keep"), "no anneal under way")
    assert_bad_input(invoke("anneal", "status", run), "no anneal")
    assert_bad_input(
        invoke("anneal", "start", tmp_missing := run.parent / "nope", "--change", "fast-waves"), "nope"
    )
    assert not tmp_missing.exists()
    assert snapshot(run) == before
    # no references: nothing for the guard to play
    assert_bad_input(
        invoke("anneal", "start", run, "--change", "fast-waves", *every, "--set", "eval.references=[]"),
        "eval.references",
    )
    assert snapshot(run) == before and not (run / "anneal").exists()
    # the start, with no guard cadence in the recipe: every 10th checkpoint (the tiny recipe keeps no milestones),
    # said on a line of its own; the start version is rated under the change, pinned in the guard's league
    begun = invoke("anneal", "start", run, "--change", "fast-waves")
    assert begun.exit_code == 0, begun.output
    assert "guard cadence: a version rated under the change every 20 versions (from 10 x train.checkpoint_every" in (
        " ".join(begun.stdout.split())
    )
    started = snapshot(run)
    baseline = json.loads((run / "run.json").read_text())["anneal"]["baseline"]
    guard_league = json.loads((run / "anneal" / "fast-waves" / "league" / "league.json").read_text())
    start_agent = next(a for a in guard_league["agents"] if a["name"] == f"v{baseline['version']}")
    assert start_agent["fixed"] and start_agent["mu"] == pytest.approx(baseline["mu"])
    assert baseline["version"] == CheckpointStore(run / "checkpoints.zarr").latest() and baseline["games"] == 4
    # a second anneal while one runs, and a stop that says neither --keep nor --drop
    assert_bad_input(invoke("anneal", "start", run, "--change", "canary-mirror", *every), "under way")
    assert_bad_input(invoke("anneal", "stop", run), "--keep", "--drop")
    assert snapshot(run) == started
    status = json.loads(invoke("anneal", "status", run, "--json").output)
    assert (status["change"], status["trained"], status["fraction"]) == ("fast-waves", False, 0.0)
    assert status["settings"]["every_versions"] == 20
    dropped = invoke("anneal", "stop", run, "--drop", "--json")
    assert json.loads(dropped.output)["outcome"] == "drop"
    assert 'change = ""' in (run / "recipe.toml").read_text()


def trainer(run: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("FIVECTL_DEBUG", None)
    return subprocess.Popen(
        [sys.executable, "-m", "fivectl.cli.main", "train", "--run", str(run), "--resume", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,  # kill -9 takes its guard process with it, as a crash of the machine would
    )


def wait_for_version(run: Path, version: int, proc: subprocess.Popen, timeout: float = 240) -> None:
    store = CheckpointStore(run / "checkpoints.zarr")
    deadline = time.time() + timeout
    while time.time() < deadline:
        if (store.latest() or 0) >= version:
            return
        assert proc.poll() is None, f"trainer exited early with {proc.returncode}"
        time.sleep(0.1)
    pytest.fail(f"no checkpoint v{version} in time")


def test_the_guard_reverts_the_canary_through_a_kill_and_an_exact_resume(run, rated_run, tmp_path):
    over = 2000
    canary = "canary-swapped-credit"
    started = invoke("anneal", "start", run, "--change", canary, "--over", over, "--set", "eval.every_versions=3")
    assert started.exit_code == 0, started.output
    # A tiny budget cannot show a canary's harm: the baseline as if the start version had rated far above random
    # play, so the versions trained under the canary rate more than the guard below it.
    meta = json.loads((run / "run.json").read_text())
    meta["anneal"]["baseline"]["mu"] = 25.0
    (run / "run.json").write_text(json.dumps(meta))
    start_version = CheckpointStore(run / "checkpoints.zarr").latest()

    proc = trainer(run, "--max-samples", "100000")
    wait_for_version(run, start_version + 4, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    store = CheckpointStore(run / "checkpoints.zarr")
    at_kill = store.load_attrs(store.latest())
    ramp = at_kill["anneal"]
    assert ramp["change"] == canary and ramp["samples"] == at_kill["counters"]["samples"]

    resumed = invoke(
        "train", "--run", run, "--resume", "--json", "--max-samples", at_kill["counters"]["samples"] + 448
    )
    assert resumed.exit_code == 0, resumed.output

    # the fraction is the same function of samples before and after the kill: exact resume
    rows = [
        r
        for r in MetricsLog(run / "metrics").read().to_pylist()
        if r.get("anneal_fraction") is not None and r["samples"] > ramp["start_samples"]
    ]
    after = next(r for r in rows if r["samples"] > ramp["samples"])
    expected = min(1.0, (ramp["position"] + (after["samples"] - ramp["samples"]) * ramp["speed"]) / over)
    assert after["anneal_fraction"] == pytest.approx(expected)
    before_revert = [r for r in rows if r["anneal_reverts"] == 0]
    for r in before_revert:
        assert r["anneal_fraction"] == pytest.approx((r["samples"] - ramp["start_samples"]) / over)
    shares = [r["anneal_variant_share"] for r in rows if r["anneal_variant_share"] is not None]
    assert max(shares) > 0  # samples were played under the change

    status = json.loads(invoke("anneal", "status", run, "--json").output)
    reverts = [e for e in status["guard_history"] if e["action"] == "revert"]
    assert status["reverts"] >= 1 and reverts, status
    assert (
        reverts[0]["drop"] > 2.0 and reverts[0]["fraction_after"] == 0.0 and reverts[0]["speed_after"] == 0.5
    )
    assert status["speed"] == 0.5 ** status["reverts"]
    text = invoke("anneal", "status", run, "--plot", tmp_path / "anneal.png")
    assert text.exit_code == 0, text.output
    assert "revert" in text.output and canary in text.output
    assert (tmp_path / "anneal.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # stop --keep: the change is part of the run's game, and training runs it in every game
    kept = invoke("anneal", "stop", run, "--keep", "--json")
    assert kept.exit_code == 0, kept.output
    assert json.loads((run / "run.json").read_text())["game_changes"] == [canary]
    assert_bad_input(invoke("anneal", "stop", run, "--keep"), "no anneal under way")
    samples = store.load_attrs(store.latest())["counters"]["samples"]
    shutil.rmtree(run / "rollouts")
    again = invoke("train", "--run", run, "--resume", "--json", "--max-samples", samples + 128)
    assert again.exit_code == 0, again.output
    variants = [f.arrays["variant"] for f in read_rollouts(run / "rollouts")]
    assert variants and all(v.all() for v in variants)
    assert "ended (keep)" in invoke("anneal", "status", run).output
    # matches of the run play its game, the kept change included, unless --change says otherwise (short games:
    # what is checked is the change they run)
    short = ("--games", "2", "--set", "game.time_limit_s=10", "--json")
    played = invoke("evaluate", "match", f"{run}@latest", "random", *short)
    assert played.exit_code == 0, played.output
    assert json.loads(played.stdout)["change"] == canary
    plain = invoke("evaluate", "match", f"{run}@latest", "random", "--change", "none", *short)
    assert json.loads(plain.stdout)["change"] is None
    assert_bad_input(
        invoke("evaluate", "match", f"{run}@latest", f"{rated_run}@latest", "--games", "2"), "different games"
    )
