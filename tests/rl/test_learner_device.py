"""The learner on a device: no host synchronisation per gradient step, and the same iteration on CUDA as on CPU."""

from __future__ import annotations

import copy

import pytest
import torch

from fivectl.config.train import TrainConfig
from fivectl.errors import BadInput
from fivectl.rl.learner import PPOLearner
from fivectl.runtime.run_setup import AUTO_DEVICE_ENV, resolve_device
from tests.rl.test_learner import WINDOW, TinyPolicy, hyper, rollout

# Every way a tensor's value reaches Python (each one waits for the device to finish its queued work).
READS = ("__float__", "__int__", "__bool__", "item", "tolist")


def count_host_reads(monkeypatch) -> dict[str, int]:
    counts = {"reads": 0}
    for name in READS:
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _original=original, **kwargs):
            counts["reads"] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    return counts


def reads_per_iteration(monkeypatch, epochs: int, minibatches: int) -> int:
    # The test policy's torch.distributions checks its arguments on the host; fivectl's network does not use
    # torch.distributions, so the count is the learner's own.
    monkeypatch.setattr(torch.distributions.Distribution, "_validate_args", False)
    model = TinyPolicy(seed=2)
    batch = rollout(model, columns=8, seed=2)
    train = TrainConfig(bptt=WINDOW, epochs=epochs, minibatches=minibatches)
    learner = PPOLearner(model, train, generator=torch.Generator().manual_seed(0))
    learner.train_iteration(batch, hyper())  # first-step allocations (optimizer state) out of the count
    with monkeypatch.context() as patch:
        counts = count_host_reads(patch)
        metrics = learner.train_iteration(batch, hyper())
    assert {"loss", "aux_win", "grad_norm", "optimizer_clip_fraction", "explained_variance"} <= set(metrics)
    assert all(isinstance(v, float) for v in metrics.values())
    return counts["reads"]


def test_an_iteration_reads_device_values_a_fixed_number_of_times_whatever_its_steps(monkeypatch):
    one_step = reads_per_iteration(monkeypatch, epochs=1, minibatches=1)
    eight_steps = reads_per_iteration(monkeypatch, epochs=2, minibatches=4)
    # the loss parts, the optimizer's clip count and the gradient norm of every step and parameter are read
    # together at the end of the iteration: 8 gradient steps read no more than 1
    assert eight_steps == one_step
    assert one_step <= 4


def test_auto_device_follows_the_environment_and_cuda_by_name_needs_cuda(monkeypatch):
    monkeypatch.setenv(AUTO_DEVICE_ENV, "cpu")
    assert resolve_device("auto") == torch.device("cpu")
    monkeypatch.setenv(AUTO_DEVICE_ENV, "tpu")
    with pytest.raises(BadInput, match=AUTO_DEVICE_ENV):
        resolve_device("auto")
    if not torch.cuda.is_available():
        with pytest.raises(BadInput, match="no CUDA device"):
            resolve_device("cuda")


# The real network on CUDA (bfloat16, exact resume) is tested in test_policy_cuda.py.
@pytest.mark.gpu
def test_an_iteration_on_cuda_matches_the_cpu_and_checkpoints_keep_the_cuda_rng():
    from fivectl.runtime.run_state import rng_arrays
    from fivectl.store.state_codec import set_cuda_rng_states

    cpu_model = TinyPolicy(seed=3)
    batch = rollout(cpu_model, columns=8, seed=3)
    cuda_model = copy.deepcopy(cpu_model).cuda()
    train = TrainConfig(bptt=WINDOW, epochs=2, minibatches=2)
    results = []
    for model in (cpu_model, cuda_model):
        learner = PPOLearner(model, train, generator=torch.Generator().manual_seed(0))
        results.append(learner.train_iteration(batch, hyper()))
    for name, value in results[0].items():
        assert results[1][name] == pytest.approx(value, rel=1e-3, abs=1e-5), name
    for p_cpu, p_cuda in zip(cpu_model.parameters(), cuda_model.parameters(), strict=True):
        torch.testing.assert_close(p_cuda.cpu(), p_cpu, rtol=1e-3, atol=1e-5)

    saved = rng_arrays()
    assert "cuda" in saved
    expected = torch.rand(4, device="cuda")
    set_cuda_rng_states(saved["cuda"])
    torch.testing.assert_close(torch.rand(4, device="cuda"), expected)
