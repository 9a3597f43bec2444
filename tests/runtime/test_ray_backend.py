"""Rollout workers as Ray actors (``--backend ray``) on a local two-node Ray cluster started by the test.

One cluster for the module (a head and one more node, loopback only, small object stores): a run trains with
actors on both nodes, a worker actor killed mid-run is replaced and training goes on, the run resumes from its
checkpoint on Ray; bad input (ray missing, an unreachable cluster, an unknown backend) writes nothing. The tests
that run Ray skip without the ``ray`` extra (and fail without it where FIVECTL_REQUIRE lists ray, as in CI).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from shared_helpers import assert_bad_input, require_optional
from typer.testing import CliRunner

from fivectl.cli.main import app
from fivectl.runtime.ray_backend import actor_name, run_namespace
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.metrics import MetricsLog
from tests.runtime.conftest import fivectl
from tests.runtime.test_crash import wait_for_checkpoint

OBJECT_STORE_BYTES = 80 * 1024 * 1024  # per node: 160 MB for the cluster


# Loopback only: Ray's switch for single-machine clusters (read when ray is imported, here and by every process
# the test starts) keeps every node, driver and worker on 127.0.0.1 instead of the machine's network address.
LOOPBACK_ONLY = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def require_ray() -> None:
    require_optional("ray", importlib.util.find_spec("ray") is not None, "pip install 'fivectl[ray]'")


@pytest.fixture(scope="module")
def ray_cluster():
    require_ray()
    saved = {key: os.environ.get(key) for key in LOOPBACK_ONLY}
    os.environ.update(LOOPBACK_ONLY)
    import ray
    from ray.cluster_utils import Cluster

    node = {"num_cpus": 1, "object_store_memory": OBJECT_STORE_BYTES}  # one worker actor per node
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    cluster.add_node(**node)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def start_ray_training(recipe, run, address, stderr_path, *extra):
    """The CLI in a subprocess; its stderr goes to a file (a pipe nobody reads would fill up and block it)."""
    recipe_arg = [str(recipe)] if recipe else []
    with open(stderr_path, "w") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "fivectl.cli.main", "train", *recipe_arg, "--run", str(run),
             "--backend", "ray", "--ray-address", address, *extra],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )  # fmt: skip


def get_actor(run, trainer_pid: int, worker: int, generation: int, timeout: float = 60.0):
    import ray

    deadline = time.time() + timeout
    while True:
        try:
            return ray.get_actor(actor_name(worker, generation), namespace=run_namespace(run, trainer_pid))
        except ValueError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)


def test_ray_workers_train_are_replaced_when_killed_and_the_run_resumes(ray_cluster, tiny_recipe, tmp_path):
    import ray

    run = tmp_path / "run"
    log = tmp_path / "stderr.txt"
    proc = start_ray_training(tiny_recipe, run, ray_cluster.address, log, "--workers", "2", "--max-minutes", "3")
    try:
        wait_for_checkpoint(run, 2, proc)
        first = get_actor(run, proc.pid, 0, 0)
        killed_at = CheckpointStore(run / "checkpoints.zarr").latest()
        ray.kill(first, no_restart=True)
        replacement = get_actor(run, proc.pid, 0, 1)  # the learner has started generation 1 of worker 0
        wait_for_checkpoint(run, killed_at + 4, proc)  # and training goes on
        assert ray.get(replacement.__ray_ready__.remote(), timeout=30)  # alive, not a leftover name
    finally:
        proc.send_signal(signal.SIGTERM)  # writes a checkpoint and stops, as Ctrl-C does
        proc.wait(timeout=120)
    stderr = log.read_text()
    assert proc.returncode == 0, stderr
    assert "worker 0 died" in stderr and "worker 0 restarted: generation 1" in stderr

    metrics = MetricsLog(run / "metrics").read()
    assert max(metrics.column("version").to_pylist()) >= killed_at + 4
    assert all(s >= 0 for s in metrics.column("staleness_mean").to_pylist())
    assert metrics.column("workers_alive").to_pylist()[-1] == 2
    assert 0 < metrics.column("sample_reuse").to_pylist()[-1] <= 1.0  # reported as for local workers

    ckpt = CheckpointStore(run / "checkpoints.zarr").load()
    resumed = fivectl(
        "train", "--run", str(run), "--resume", "--json", "--backend", "ray",
        "--ray-address", ray_cluster.address, "--workers", "2",
        "--max-samples", str(ckpt.attrs["counters"]["samples"] + 128),
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert f"resumed from checkpoint v{ckpt.version}" in resumed.stderr
    assert summary["version"] > ckpt.version
    iterations = MetricsLog(run / "metrics").read().column("iteration").to_pylist()
    assert iterations == list(range(1, summary["iterations"] + 1)), "gap or duplicate after the resume"


def test_ray_workers_feed_several_learners(ray_cluster, tiny_recipe, tmp_path):
    """Ray actors play, rank 0 takes their fragments and shares each batch with the learner it started."""
    run = tmp_path / "run"
    result = fivectl(
        "train", str(tiny_recipe), "--run", str(run), "--json", "--backend", "ray",
        "--ray-address", ray_cluster.address, "--workers", "2", "--learners", "2", "--max-samples", "300",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["stop_reason"] == "max_samples" and summary["samples"] >= 300
    iterations = MetricsLog(run / "metrics").read().column("iteration").to_pylist()
    assert iterations == list(range(1, summary["iterations"] + 1))


def train(*args: str):
    return CliRunner().invoke(app, ["train", *args])


def test_unreachable_ray_address_is_bad_input_and_writes_nothing(tiny_recipe, tmp_path):
    require_ray()
    run = tmp_path / "r"
    result = train(str(tiny_recipe), "--run", str(run), "--backend", "ray", "--ray-address", "127.0.0.1:9",
                   "--workers", "1")  # fmt: skip
    assert_bad_input(result, "--ray-address 127.0.0.1:9", "no Ray cluster answers")
    assert_bad_input(train(str(tiny_recipe), "--run", str(run), "--backend", "ray", "--ray-address", "nohost",
                     "--workers", "1"),
                     "expected host:port")  # fmt: skip
    assert not run.exists()


def test_missing_ray_package_names_the_extra_and_writes_nothing(tiny_recipe, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails, as on a machine without the extra
    run = tmp_path / "r"
    assert_bad_input(train(str(tiny_recipe), "--run", str(run), "--backend", "ray", "--workers", "1"), "fivectl[ray]")
    assert not run.exists()


def test_serial_ray_is_bad_input_and_writes_nothing(tiny_recipe, tmp_path):
    require_ray()
    run = tmp_path / "r"
    assert_bad_input(train(str(tiny_recipe), "--run", str(run), "--backend", "ray", "--workers", "0"), "--workers 1")
    assert not run.exists()


def test_unknown_backend_is_bad_input_and_writes_nothing(tiny_recipe, tmp_path):
    run = tmp_path / "r"
    assert_bad_input(train(str(tiny_recipe), "--run", str(run), "--backend", "dask"), "--backend")
    assert_bad_input(train(str(tiny_recipe), "--run", str(run), "--set", "train.backend='dask'"), "train.backend")
    assert not run.exists()
