import pytest
import torch

from fivectl.model import kernels
from fivectl.model.attention import unit_scores
from fivectl.model.kernels.attention import gathered_scores


def reference_scores(packed: torch.Tensor, samples: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """The layer's reference path: ``unit_scores`` with the kernels off."""
    enabled = kernels.ENABLED
    kernels.ENABLED = False
    try:
        return unit_scores(packed, samples, query)
    finally:
        kernels.ENABLED = enabled


def test_the_reference_is_the_gathered_dot_product(kernels_off):
    g = torch.Generator().manual_seed(2)
    packed, query = torch.rand(6, 3, generator=g), torch.rand(2, 3, generator=g)
    samples = torch.tensor([0, 0, 1, 1, 1, 1])
    expected = torch.stack([packed[r] @ query[samples[r]] for r in range(6)])
    torch.testing.assert_close(unit_scores(packed, samples, query.requires_grad_(True)), expected)


@pytest.mark.parametrize("score", [unit_scores, gathered_scores])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_compiled_unit_scores_equal_the_reference_in_value_and_gradient(score, dtype):
    g = torch.Generator().manual_seed(0)
    n, count, width = 30, 10, 16
    observed = torch.rand(n, count, generator=g) < 0.4
    observed[:2] = False  # samples without a unit: their query gets no gradient from here
    rows = observed.reshape(-1).nonzero().squeeze(1)
    samples = torch.div(rows, count, rounding_mode="floor")
    packed = torch.relu(torch.randn(rows.numel(), width, generator=g, dtype=dtype))
    query = torch.randn(n, width, generator=g, dtype=dtype)
    weights = torch.randn(rows.numel(), generator=g, dtype=dtype)
    results = []
    for run in (score, reference_scores):
        p, q = packed.clone().requires_grad_(True), query.clone().requires_grad_(True)
        out = run(p, samples, q)
        assert (type(out.grad_fn).__name__ == "_GatheredScoresBackward") == (run is score)
        (out * weights).sum().backward()
        results.append((out.detach(), p.grad, q.grad))
    tolerance = 1e-12 if dtype == torch.float64 else 1e-6
    for got, want in zip(results[0], results[1], strict=True):
        torch.testing.assert_close(got, want, rtol=tolerance, atol=tolerance)
    assert torch.all(results[0][2][:2] == 0) and results[0][2][2:].abs().sum() > 0


def test_without_gradients_it_is_the_reference_itself():
    g = torch.Generator().manual_seed(1)
    packed, query = torch.rand(12, 4, generator=g), torch.rand(5, 4, generator=g)
    samples = torch.tensor([0, 0, 1, 1, 1, 2, 2, 3, 3, 4, 4, 4])
    with torch.no_grad():
        assert torch.equal(unit_scores(packed, samples, query), reference_scores(packed, samples, query))
