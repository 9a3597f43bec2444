import pytest
import torch

from fivectl.model import kernels
from fivectl.model.kernels.pooling import segment_max_pool
from fivectl.model.pooling import unit_max_pool


def reference_pool(values: torch.Tensor, samples: torch.Tensor, n: int) -> torch.Tensor:
    """The layer's reference path: ``unit_max_pool`` with the kernels off."""
    enabled = kernels.ENABLED
    kernels.ENABLED = False
    try:
        return unit_max_pool(values, samples, n)
    finally:
        kernels.ENABLED = enabled


def packed_units(dtype: torch.dtype, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, int]:
    """ReLU outputs of observed units, as a unit set's MLP gives them: many exact zeros, some samples without a
    unit, and units with equal values (copies of another row) so that the gradient has ties to split."""
    g = torch.Generator().manual_seed(seed)
    n, count, width = 40, 12, 16
    observed = torch.rand(n, count, generator=g) < 0.4
    observed[:3] = False  # samples with no unit at all
    rows = observed.reshape(-1).nonzero().squeeze(1)
    values = torch.relu(torch.randn(rows.numel(), width, generator=g, dtype=dtype))
    values[1::7] = values[0::7][: values[1::7].shape[0]]  # ties, within and across samples
    return values, torch.div(rows, count, rounding_mode="floor"), n


def test_the_reference_is_scatter_reduce_amax(kernels_off):
    values, samples, n = packed_units(torch.float32)
    v = values.requires_grad_(True)
    expected = values.new_zeros(n, values.shape[1]).scatter_reduce(
        0, samples.unsqueeze(-1).expand_as(values), values, "amax", include_self=True
    )
    pooled = unit_max_pool(v, samples, n)
    assert torch.equal(pooled, expected) and "ScatterReduceBackward0" in type(pooled.grad_fn).__name__


@pytest.mark.parametrize("pool", [unit_max_pool, segment_max_pool])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_compiled_max_pool_equals_the_reference_in_value_and_gradient_to_the_bit(pool, dtype):
    values, samples, n = packed_units(dtype)
    grad_out = torch.randn(n, values.shape[1], generator=torch.Generator().manual_seed(1), dtype=dtype)
    a = values.clone().requires_grad_(True)
    b = values.clone().requires_grad_(True)
    pooled, expected = pool(a, samples, n), reference_pool(b, samples, n)
    assert type(pooled.grad_fn).__name__ == "_SegmentMaxPoolBackward"  # the kernel ran
    (pooled * grad_out).sum().backward()
    (expected * grad_out).sum().backward()
    assert torch.equal(pooled, expected)
    assert torch.equal(a.grad, b.grad)
    assert (a.grad[values > 0] != 0).any() and (a.grad != 0).sum() < a.grad.numel()  # not all zeros, not dense
    tied = torch.bincount(samples[(values[:, 0] == expected[samples, 0]) & (values[:, 0] > 0)], minlength=n)
    assert (tied > 1).any()  # the data has ties at a sample's max, where the split matters


def test_without_gradients_it_is_the_reference_itself():
    values, samples, n = packed_units(torch.float32)
    with torch.no_grad():
        assert torch.equal(unit_max_pool(values, samples, n), reference_pool(values, samples, n))
    assert torch.equal(unit_max_pool(values, samples, n), reference_pool(values, samples, n))
