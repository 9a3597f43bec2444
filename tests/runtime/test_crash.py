"""Crash safety: kill -9 of the trainer at random moments, a killed worker, orphaned workers, a corrupt checkpoint, a read-only run."""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from fivectl.config import load_recipe
from fivectl.model import PolicyNet
from fivectl.runtime.fragment_queue import ProcessSource
from fivectl.runtime.fragment_source import FragmentSourceOptions
from fivectl.runtime.params import ParameterStore
from fivectl.schema import load_schema
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.metrics import MetricsLog


def start_training(recipe, run, *extra) -> subprocess.Popen:
    recipe_arg = [str(recipe)] if recipe else []
    return subprocess.Popen(
        [sys.executable, "-m", "fivectl.cli.main", "train", *recipe_arg, "--run", str(run), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def wait_for_checkpoint(run, version: int, proc, timeout: float = 180) -> None:
    store = CheckpointStore(run / "checkpoints.zarr")
    deadline = time.time() + timeout
    while time.time() < deadline:
        if (run / "checkpoints.zarr").exists() and (store.latest() or 0) >= version:
            return
        if proc.poll() is not None:
            pytest.fail(f"trainer exited early with {proc.returncode}")
        time.sleep(0.05)
    pytest.fail("no checkpoint in time")


def test_kill_minus_9_at_random_moments_then_resume(tiny_recipe, tmp_path, cli):
    rng = random.Random(7)
    run = tmp_path / "run"
    proc = start_training(tiny_recipe, run, "--workers", "0")
    wait_for_checkpoint(run, 2, proc)
    for trial in range(3):
        time.sleep(rng.uniform(0.0, 1.5))  # anywhere: mid-iteration, mid-checkpoint, mid-metrics write
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        store = CheckpointStore(run / "checkpoints.zarr")
        published = store.latest()
        ckpt = store.load()  # the last published checkpoint is readable
        assert ckpt.version == published
        # metrics rows are buffered, but never behind a published checkpoint
        assert MetricsLog(run / "metrics").last_iteration() >= ckpt.attrs["counters"]["iteration"]
        resumed = cli(
            "train",
            "--run",
            str(run),
            "--resume",
            "--json",
            "--max-samples",
            str(ckpt.attrs["counters"]["samples"] + 64),
        )
        assert resumed.returncode == 0, resumed.stderr
        summary = json.loads(resumed.stdout)
        assert summary["version"] > published
        iterations = MetricsLog(run / "metrics").read().column("iteration").to_pylist()
        assert iterations == list(range(1, summary["iterations"] + 1)), f"trial {trial}: gap or duplicate"
        if trial < 2:
            proc = start_training(None, run, "--resume", "--workers", "0")
            wait_for_checkpoint(run, summary["version"] + 2, proc)


def test_corrupt_latest_checkpoint_falls_back_with_a_warning(tiny_recipe, tmp_path, cli):
    run = tmp_path / "run"
    first = cli("train", str(tiny_recipe), "--run", str(run), "--json", "--max-samples", "256")
    assert first.returncode == 0, first.stderr
    store = CheckpointStore(run / "checkpoints.zarr")
    latest = store.latest()
    previous = store.versions()[-2]
    victim = max(
        (p for p in (run / "checkpoints.zarr" / f"v{latest:08d}").rglob("*") if p.is_file()),
        key=lambda p: p.stat().st_size,
    )
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    resumed = cli("train", "--run", str(run), "--resume", "--json", "--max-samples", "400")
    assert resumed.returncode == 0, resumed.stderr
    assert "warning" in resumed.stderr and f"v{latest}" in resumed.stderr
    assert f"resumed from checkpoint v{previous}" in resumed.stderr


def test_disk_full_is_a_clear_error_and_keeps_the_last_checkpoint(tiny_recipe, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import fivectl.store.metrics as metrics_module
    from fivectl.cli.main import app

    run = tmp_path / "run"
    runner = CliRunner()
    assert (
        runner.invoke(app, ["train", str(tiny_recipe), "--run", str(run), "--max-samples", "64"]).exit_code
        == 0
    )
    before = CheckpointStore(run / "checkpoints.zarr").latest()

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(metrics_module, "write_bytes_atomic", disk_full)
    result = runner.invoke(app, ["train", "--run", str(run), "--resume", "--max-samples", "400"])
    assert result.exit_code == 1
    assert "No space left on device" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 3
    assert CheckpointStore(run / "checkpoints.zarr").load().version >= before


def test_a_worker_killed_while_waiting_for_a_slot_is_replaced_and_fragments_keep_coming(tiny_recipe):
    # The learner holds every slot, so both workers are blocked waiting for one: the moment a worker killed
    # inside a shared mp.Queue's get() kept its lock and starved every other worker forever.
    recipe = load_recipe(tiny_recipe, ["train.workers=2"])
    schema = load_schema(1)
    net = PolicyNet(schema, recipe.model, 1)
    params = ParameterStore.for_model(net)
    params.publish(net, 0, team_spirit=0.0)
    options = FragmentSourceOptions(recipe, schema, params, seed=1, workers=2, heartbeat_timeout_s=60)
    source = ProcessSource(options)
    try:
        held = []
        while len(held) < source.n_slots:
            got = source.get(timeout=120)
            assert got is not None
            held.append(got[0])
        time.sleep(0.5)
        source.procs[0].kill()
        source.procs[0].join()
        events = source.check_health()
        assert [(e.worker_id, e.kind) for e in events] == [(0, "died"), (0, "restarted")]
        for slot in held:
            source.release(slot)
        seen_workers = set()
        deadline = time.time() + 180
        while seen_workers != {0, 1} and time.time() < deadline:
            got = source.get(timeout=5)
            if got is None:
                continue
            slot, views = got
            seen_workers.add(int(views["header"][1]))
            source.release(slot)
        assert seen_workers == {0, 1}
        assert source.stats().workers_alive == 2
    finally:
        source.close()
        params.close(unlink=True)


def spawned_children(pid: int) -> list[int]:
    """Worker processes started by ``pid`` (multiprocessing's spawn children, not its resource tracker)."""
    out = subprocess.run(["ps", "-ww", "-o", "pid=,args=", "--ppid", str(pid)], capture_output=True, text=True)
    return [int(line.split()[0]) for line in out.stdout.splitlines() if "spawn_main" in line]


def is_running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_workers_exit_when_the_learner_is_killed(tiny_recipe, tmp_path):
    run = tmp_path / "run"
    proc = start_training(tiny_recipe, run, "--set", "train.workers=2")
    try:
        wait_for_checkpoint(run, 2, proc)
        workers = spawned_children(proc.pid)
        assert len(workers) == 2
    finally:
        proc.kill()
        proc.wait()
    deadline = time.time() + 60
    while any(is_running(pid) for pid in workers) and time.time() < deadline:
        time.sleep(0.2)
    orphans = [pid for pid in workers if is_running(pid)]
    for pid in orphans:
        os.kill(pid, signal.SIGKILL)
    assert orphans == []


def test_ctrl_c_writes_a_checkpoint_and_exits_cleanly(tiny_recipe, tmp_path):
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fivectl.cli.main", "train", str(tiny_recipe), "--run", str(run), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_checkpoint(run, 2, proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    summary = json.loads(out)
    assert summary["stop_reason"] == "interrupted"
    assert CheckpointStore(run / "checkpoints.zarr").latest() == summary["version"] == summary["checkpoint"]
