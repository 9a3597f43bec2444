"""Learners started by torchrun (or its environment: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), gloo
on CPU: RANK 0 trains, the other ranks learn beside it from what it sends them, and end with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from shared_helpers import assert_bad_input
from typer.testing import CliRunner

from fivectl.cli.main import app
from fivectl.runtime.distributed import free_loopback_port, launch_env
from fivectl.store.metrics import MetricsLog
from tests.runtime.test_crash import wait_for_checkpoint

TORCHRUN = Path(sys.executable).parent / "torchrun"
# The tiny recipe's learner batch: batch_windows 8 x bptt 8 samples per learner.
SAMPLES_PER_LEARNER = 8 * 8


def rank_env(rank: int, port: int, world: int = 2) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("FIVECTL_DEBUG", None)
    env.update(
        RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    return env


def torchrun_parent_env() -> dict[str, str]:
    """This environment without any rank of its own (torchrun sets them for its children)."""
    drop = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "FIVECTL_DEBUG")
    return {k: v for k, v in os.environ.items() if k not in drop}


def start_rank(rank: int, port: int, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "fivectl.cli.main", "train", *args],
        env=rank_env(rank, port),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def first_iteration_samples(run: Path) -> int:
    return MetricsLog(run / "metrics").read().column("samples").to_pylist()[0]


def assert_two_learners_trained(rank0: subprocess.Popen, rank1: subprocess.Popen, run: Path, elsewhere: Path):
    """Both ranks ended well, rank 1 with rank 0 and without writing its own paths, and every iteration's batch
    was two learners'."""
    _, err0 = rank0.communicate(timeout=240)
    _, err1 = rank1.communicate(timeout=60)
    assert rank0.returncode == 0, err0
    assert rank1.returncode == 0, err1
    assert "learner rank 1 of 2: stopped with rank 0" in err1
    assert not elsewhere.exists()
    assert first_iteration_samples(run) == 2 * SAMPLES_PER_LEARNER


def test_rank_1_learns_beside_rank_0_without_its_files(tiny_recipe, tmp_path):
    run = tmp_path / "run"
    port = free_loopback_port()
    # rank 1 is given a recipe and a run directory that do not exist, as on a machine without rank 0's files:
    # everything it needs comes from rank 0
    elsewhere = tmp_path / "other-machine"
    rank1 = start_rank(1, port, str(elsewhere / "tiny.toml"), "--run", str(elsewhere / "run"))
    rank0 = start_rank(0, port, str(tiny_recipe), "--run", str(run), "--max-samples", "300", "--json")
    assert_two_learners_trained(rank0, rank1, run, elsewhere)


def test_rank_1_exits_when_rank_0_is_killed(tiny_recipe, tmp_path):
    run = tmp_path / "run"
    port = free_loopback_port()
    rank1 = start_rank(1, port, str(tiny_recipe), "--run", str(run))
    rank0 = start_rank(0, port, str(tiny_recipe), "--run", str(run), "--max-minutes", "5")
    try:
        wait_for_checkpoint(run, 2, rank0)
        assert rank1.poll() is None
        rank0.send_signal(signal.SIGKILL)
        rank0.wait()
        _, err1 = rank1.communicate(timeout=30)  # gloo sees rank 0's connections close
    finally:
        for proc in (rank0, rank1):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert rank1.returncode == 1
    lines = err1.strip().splitlines()
    assert len(lines) == 1 and "learner rank 1: rank 0 is gone" in lines[0], err1


@pytest.mark.skipif(not TORCHRUN.exists(), reason="torchrun is not next to this python")
def test_torchrun_two_nodes_on_one_machine(tiny_recipe, tmp_path):
    """The README's two-machine commands, both machines here: node 1 given paths that do not exist."""
    port = str(free_loopback_port())
    env = torchrun_parent_env()

    def node(rank: int, recipe: Path, run: Path, *extra: str) -> subprocess.Popen:
        command = [
            str(TORCHRUN), "--nnodes", "2", "--node-rank", str(rank), "--nproc-per-node", "1",
            "--master-addr", "127.0.0.1", "--master-port", port,
            "-m", "--", "fivectl.cli.main", "train", str(recipe), "--run", str(run), *extra,
        ]  # fmt: skip
        return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    run = tmp_path / "run"
    elsewhere = tmp_path / "node1"
    node1 = node(1, elsewhere / "tiny.toml", elsewhere / "run")
    node0 = node(0, tiny_recipe, run, "--max-samples", "300")
    assert_two_learners_trained(node0, node1, run, elsewhere)


# ---- the environment, checked before anything starts -----------------------------------------------------------

runner = CliRunner()


def train_under(monkeypatch, env: dict[str, str], *args: str):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runner.invoke(app, ["train", *args])


GOOD = {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}


@pytest.mark.parametrize(
    "env, needles",
    [
        ({"RANK": "1"}, ("WORLD_SIZE", "MASTER_ADDR", "not set")),
        ({**GOOD, "RANK": "one"}, ("RANK='one'", "not an integer")),
        ({**GOOD, "RANK": "2"}, ("RANK 2 of WORLD_SIZE 2",)),
        ({**GOOD, "MASTER_PORT": "70000"}, ("MASTER_PORT 70000",)),
        ({**GOOD, "MASTER_ADDR": ""}, ("MASTER_ADDR not set",)),
    ],
)
def test_a_missing_or_garbled_environment_is_bad_input(monkeypatch, tiny_recipe, tmp_path, env, needles):
    result = train_under(monkeypatch, env, str(tiny_recipe), "--run", str(tmp_path / "r"))
    assert_bad_input(result, "torchrun environment", *needles)
    assert not (tmp_path / "r").exists()


def test_learners_that_disagree_with_the_world_size_are_bad_input(monkeypatch, tiny_recipe, tmp_path):
    result = train_under(monkeypatch, GOOD, str(tiny_recipe), "--run", str(tmp_path / "r"), "--learners", "3")
    assert_bad_input(result, "--learners 3", "WORLD_SIZE=2")
    assert not (tmp_path / "r").exists()


def test_no_torchrun_variables_is_a_plain_run():
    assert launch_env({"MASTER_ADDR": "10.0.0.1"}) is None  # a cluster may set MASTER_ADDR for other tools
    launch = launch_env({**GOOD, "RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"})
    assert (launch.rank, launch.world, launch.local_rank) == (3, 4, 1)


def test_the_start_message_carries_any_tree_of_tensors_bitwise():
    """What rank 0 sends the others (its checkpoint's arrays, batches): leaves of every size and dtype, whose
    bytes need not start at a multiple of their element size in the buffer."""
    import torch

    from fivectl.runtime.distributed import tree_from_bytes, tree_to_bytes

    tree = {
        "rng": {"torch": torch.arange(5, dtype=torch.uint8)},  # 5 bytes: the next leaf starts unaligned
        "model": {"w": torch.randn(3, 2, dtype=torch.float64), "b": torch.randn(0)},
        "seq": [torch.tensor([True, False]), (torch.tensor(7), None)],
        "half": torch.randn(3).bfloat16(),
    }
    header, data = tree_to_bytes(tree, {"version": 4})
    back, info = tree_from_bytes(header, data)
    assert info == {"version": 4}
    assert isinstance(back["seq"][1], tuple) and back["seq"][1][1] is None
    flat = [
        tree["rng"]["torch"],
        tree["model"]["w"],
        tree["model"]["b"],
        *tree["seq"][0:1],
        tree["seq"][1][0],
    ]
    again = [
        back["rng"]["torch"],
        back["model"]["w"],
        back["model"]["b"],
        *back["seq"][0:1],
        back["seq"][1][0],
    ]
    for a, b in zip([*flat, tree["half"]], [*again, back["half"]], strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


@pytest.mark.gpu
@pytest.mark.skipif(not TORCHRUN.exists(), reason="torchrun is not next to this python")
def test_torchrun_learners_on_two_gpus(tiny_recipe, tmp_path):
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices")
    run = tmp_path / "run"
    env = torchrun_parent_env()
    command = [
        str(TORCHRUN), "--standalone", "--nproc-per-node", "2",
        "-m", "--", "fivectl.cli.main", "train", str(tiny_recipe), "--run", str(run), "--device", "cuda",
        "--max-samples", "300",
    ]  # fmt: skip
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    assert first_iteration_samples(run) == 2 * SAMPLES_PER_LEARNER
