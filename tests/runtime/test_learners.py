"""Several data-parallel learners (``--learners 2``, gloo on CPU): a run trains, survives kill -9 and resumes."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.metrics import MetricsLog
from tests.runtime.test_crash import start_training, wait_for_checkpoint


def learner_processes(parent: int) -> list[int]:
    """Pids of the learner processes a trainer started (multiprocessing spawn children; workers=0 here)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == parent and b"spawn_main" in cmdline:
            pids.append(int(stat.parent.name))
    return pids


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_two_learners_train_survive_kill_minus_9_and_resume_without_gap(tiny_recipe, tmp_path, cli):
    run = tmp_path / "run"
    proc = start_training(tiny_recipe, run, "--workers", "0", "--learners", "2")
    wait_for_checkpoint(run, 2, proc)
    learners = learner_processes(proc.pid)
    assert len(learners) == 1  # rank 1; rank 0 is the trainer itself
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 20
    while any(alive(pid) for pid in learners) and time.time() < deadline:
        time.sleep(0.2)
    assert not any(alive(pid) for pid in learners), "a learner outlived its killed trainer"

    ckpt = CheckpointStore(run / "checkpoints.zarr").load()
    resumed = cli(
        "train", "--run", str(run), "--resume", "--learners", "2", "--json",
        "--max-samples", str(ckpt.attrs["counters"]["samples"] + 64),
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert summary["version"] > ckpt.version
    assert f"resumed from checkpoint v{ckpt.version}" in resumed.stderr
    iterations = MetricsLog(run / "metrics").read().column("iteration").to_pylist()
    assert iterations == list(range(1, summary["iterations"] + 1)), "gap or duplicate after the resume"
    # each iteration's batch is the two learners' (batch_windows per learner)
    samples = MetricsLog(run / "metrics").read().column("samples").to_pylist()
    assert samples[0] == 2 * 8 * 8  # 2 learners x batch_windows 8 x bptt 8


def test_more_learners_than_cores_is_bad_input_and_writes_nothing(tiny_recipe, tmp_path, cli):
    result = cli("train", str(tiny_recipe), "--run", str(tmp_path / "r"), "--learners", "100000")
    assert result.returncode == 2
    assert "--learners 100000: this machine has" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


@pytest.mark.gpu
def test_two_learners_on_two_gpus_sum_gradients_over_nccl(tiny_recipe, tmp_path, cli):
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices")
    run = tmp_path / "run"
    result = cli(
        "train", str(tiny_recipe), "--run", str(run), "--workers", "0", "--learners", "2", "--device", "cuda",
        "--max-samples", "300", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["samples"] >= 300
    assert MetricsLog(run / "metrics").read().column("samples").to_pylist()[0] == 2 * 8 * 8
