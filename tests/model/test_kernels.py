"""The dispatch between each layer's reference torch path and its kernel (``fivectl.model.kernels``)."""

from __future__ import annotations

import copy
import importlib
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import torch
from model_helpers import make_net, make_obs, sample_window

import fivectl
from fivectl.model import kernels
from fivectl.model.kernels import numba_can_run, runs_compiled
from fivectl.model.traced import TracedActor
from fivectl.schema import load_schema

REPO = Path(__file__).resolve().parents[2]

# (layer module, the kernel entry point it calls)
LAYER_KERNELS = [
    ("fivectl.model.grid", "banded_grid_block"),
    ("fivectl.model.unit_mlp", "fused_unit_mlp"),
    ("fivectl.model.pooling", "segment_max_pool"),
    ("fivectl.model.attention", "gathered_scores"),
    ("fivectl.model.normalize", "column_moments"),
]


def count_kernel_calls(monkeypatch) -> Counter:
    """Wrap every kernel entry point where its layer calls it; the counter says which ran."""
    calls: Counter = Counter()
    for module_name, name in LAYER_KERNELS:
        module = importlib.import_module(module_name)
        original = getattr(module, name)

        def counted(*args, _name=name, _original=original, **kwargs):
            calls[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)
    return calls


def train_and_act(version: int) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """A learner's step (normalizer update, evaluate, backward) and a worker's (eager and traced act) on a tiny
    network: the loss and the trunk's gradients."""
    schema = load_schema(version)
    net = make_net(schema, team_size=1)
    obs = make_obs(schema, (4, 3), seed=1)
    first = torch.zeros(4, 3, dtype=torch.bool)
    first[0] = True
    actions, _ = sample_window(net, obs, first)
    net.update_normalizers(obs)
    ev = net.evaluate(obs, actions, net.initial_state(3), first)
    loss = -ev.logprob.mean() + ev.value.square().mean()
    loss.backward()
    step = {k: v[0] for k, v in obs.items()}
    TracedActor(net).act(step, net.initial_state(3), first[0])
    grads = {n: p.grad.clone() for n, p in net.named_parameters() if p.grad is not None}
    return loss.detach(), grads


@pytest.mark.parametrize("version", [1, 2])
def test_with_kernels_off_only_the_reference_paths_run_and_compute_the_same(version, monkeypatch):
    calls = count_kernel_calls(monkeypatch)
    loss_on, grads_on = train_and_act(version)
    assert set(calls) == {name for _, name in LAYER_KERNELS}  # every kernel runs in training or acting
    calls.clear()
    monkeypatch.setattr(kernels, "ENABLED", False)
    loss_off, grads_off = train_and_act(version)
    assert not calls
    torch.testing.assert_close(loss_off, loss_on, rtol=1e-5, atol=1e-6)
    assert grads_off.keys() == grads_on.keys()
    for name in grads_on:
        torch.testing.assert_close(grads_off[name], grads_on[name], rtol=1e-4, atol=1e-5, msg=name)


def test_tensors_off_the_cpu_take_the_torch_path():
    """A CUDA learner's tensors (here: the ``meta`` device, which has no data either) never reach numba."""
    cpu = torch.zeros(3, requires_grad=True)
    elsewhere = torch.zeros(3, device="meta", requires_grad=True)
    assert numba_can_run(cpu) and runs_compiled(cpu)
    assert not numba_can_run(elsewhere) and not runs_compiled(elsewhere)
    assert not runs_compiled(cpu, elsewhere)
    assert not runs_compiled(cpu.bfloat16()) and not runs_compiled(cpu, cpu.double())


def test_the_environment_switches_the_kernels_off():
    code = "from fivectl.model import kernels; print(kernels.ENABLED)"
    env = {**os.environ, "PYTHONPATH": str(REPO), "FIVECTL_MODEL_KERNELS": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_numba_cache_is_keyed_by_every_source_below_sim_schema_and_model(tmp_path, monkeypatch):
    """The kernels live in model/kernels/: an edit there (or in any subfolder) must recompile, i.e. change the
    cache folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    package = tmp_path / "fivectl"
    for name in ("sim/core.py", "schema/spec.py", "model/grid.py", "model/kernels/grid.py"):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text("x = 1\n")
    first = fivectl._numba_cache_dir(package)
    (package / "model/kernels/grid.py").write_text("x = 2\n")
    second = fivectl._numba_cache_dir(package)
    (package / "sim/rules").mkdir()
    (package / "sim/rules/extra.py").write_text("y = 1\n")
    third = fivectl._numba_cache_dir(package)
    assert len({first, second, third}) == 3
    assert Path(first).parent == tmp_path / "cache" / "fivectl" / "numba"


@pytest.mark.gpu
def test_on_cuda_the_layers_take_the_torch_path_and_match_the_compiled_cpu_step(monkeypatch):
    """A learner's step on CUDA tensors runs no numba kernel (each layer's torch path) and computes what the
    compiled CPU step computes: loss, normalizer update and every gradient."""
    schema = load_schema(2)
    cpu_net = make_net(schema, team_size=1)
    obs = make_obs(schema, (4, 3), seed=1)
    first = torch.zeros(4, 3, dtype=torch.bool)
    first[0] = True
    actions, _ = sample_window(cpu_net, obs, first)
    cuda_net = copy.deepcopy(cpu_net).cuda()

    def step(net, device):
        on = {k: v.to(device) for k, v in obs.items()}
        net.update_normalizers(on)
        ev = net.evaluate(
            on, actions.to(device), tuple(s.to(device) for s in net.initial_state(3)), first.to(device)
        )
        loss = -ev.logprob.mean() + ev.value.square().mean() + ev.entropy.mean()
        loss.backward()
        return loss.detach().cpu(), {n: p.grad.cpu() for n, p in net.named_parameters() if p.grad is not None}

    calls = count_kernel_calls(monkeypatch)
    loss_cpu, grads_cpu = step(cpu_net, "cpu")
    assert {"banded_grid_block", "fused_unit_mlp", "column_moments"} <= set(calls)  # the CPU step is compiled
    calls.clear()
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):  # float32 convolutions, as on the CPU
        loss_cuda, grads_cuda = step(cuda_net, "cuda")
    assert not calls
    torch.testing.assert_close(loss_cuda, loss_cpu, rtol=1e-4, atol=1e-5)
    assert grads_cuda.keys() == grads_cpu.keys()
    for name in grads_cpu:
        torch.testing.assert_close(grads_cuda[name], grads_cpu[name], rtol=1e-3, atol=1e-5, msg=name)
    for name, buffer in cpu_net.named_buffers():
        torch.testing.assert_close(dict(cuda_net.named_buffers())[name].cpu(), buffer, rtol=1e-5, atol=1e-6)
