import pytest
import torch
from model_helpers import autograd_nodes, make_net, make_obs
from torch import nn

from fivectl.model import kernels
from fivectl.model.grid import grid_block
from fivectl.model.kernels.grid import band_layers, banded_grid, banded_grid_block


def grid_block_modules(c_in: int, c: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c, 3, padding=1), nn.ReLU(), nn.Conv2d(c, c, 3, padding=1), nn.ReLU())


def reference(block: nn.Sequential, x: torch.Tensor, standardizer=None) -> torch.Tensor:
    """The layer's reference path: ``grid_block`` with the kernels off."""
    enabled = kernels.ENABLED
    kernels.ENABLED = False
    try:
        return grid_block(block, x, standardizer)
    finally:
        kernels.ENABLED = enabled


@pytest.mark.parametrize("n, h, w, c_in, c", [(7, 8, 8, 2, 4), (5, 6, 9, 3, 5), (3, 1, 1, 2, 2), (4, 2, 5, 1, 3)])
def test_band_matrices_compute_the_convolution_block(n, h, w, c_in, c):
    torch.manual_seed(0)
    block = grid_block_modules(c_in, c)
    x = torch.randn(n, h, w, c_in)
    with torch.no_grad():
        expected = reference(block, x)
        got = banded_grid(x, band_layers(block, w))
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)


def test_the_reference_is_the_convolution_block_itself(kernels_off):
    torch.manual_seed(0)
    block = grid_block_modules(2, 3)
    x = torch.randn(4, 5, 6, 2)
    assert torch.equal(grid_block(block, x), block(x.permute(0, 3, 1, 2)).flatten(1))


def test_acting_runs_the_grid_through_band_matrices_that_follow_the_kernels_changes(schema):
    """The acting encoder (no gradient) keeps the band matrices until a kernel changes in place, as an optimizer
    step or a worker's parameter copy does; it must give the training encoder's output before and after."""
    net = make_net(schema, seed=3)
    obs = make_obs(schema, (6,), seed=5)
    grids = [g for g in schema.groups if g.kind == "grid"]
    assert grids, "the check needs a grid group"
    for _ in range(2):  # before and after an in-place change
        for g in grids:
            training = net.encoder.grid_features(g, obs).detach()
            with torch.no_grad():
                acting = net.encoder.grid_features(g, obs)
            torch.testing.assert_close(acting, training, rtol=1e-6, atol=1e-6)
        with torch.no_grad():
            for g in grids:
                for p in net.encoder.grids[g.name].parameters():
                    p.add_(0.5 * torch.randn_like(p))


def outputs_and_gradients(run, block: nn.Sequential, x: torch.Tensor, head: torch.Tensor) -> list[torch.Tensor]:
    block.zero_grad()
    x.grad = None
    out = run()
    (out * head).sum().backward()
    grads = [x.grad] if x.requires_grad else []
    return [out.detach(), *grads, *(p.grad for p in block.parameters())]


@pytest.mark.parametrize("n, h, w, c_in, c", [(7, 8, 8, 2, 4), (5, 6, 9, 3, 5), (3, 1, 1, 2, 2)])
def test_training_through_band_matrices_gives_the_convolutions_gradients(n, h, w, c_in, c):
    """Training runs the block through its own backward (``_BandConvReLU``): the kernels' and the input's
    gradients must be the convolutions'."""
    torch.manual_seed(1)
    block = grid_block_modules(c_in, c).double()
    x = torch.randn(n, h, w, c_in, dtype=torch.float64, requires_grad=True)
    head = torch.randn(n, c * h * w, dtype=torch.float64)
    assert "_BandConvReLUBackward" in autograd_nodes(grid_block(block, x))  # the kernel path runs
    expected = outputs_and_gradients(lambda: reference(block, x), block, x, head)
    got = outputs_and_gradients(lambda: grid_block(block, x), block, x, head)
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("n, h, w, f, c", [(7, 8, 8, 2, 4), (5, 6, 9, 3, 5), (3, 1, 1, 2, 2)])
def test_the_block_from_observations_standardizes_and_gives_the_convolutions_gradients(n, h, w, f, c):
    """Training from an observation (``_StandardizedBandGrid``: standardized into the row windows, folded
    through the ReLUs backward) computes the normalizer then the convolutions, and their kernels' gradients."""
    torch.manual_seed(2)
    block = grid_block_modules(f, c).double()
    x = torch.randn(n, h, w, f, dtype=torch.float64) * 3
    shift, scale = torch.randn(f, dtype=torch.float64), torch.rand(f, dtype=torch.float64) + 0.5
    low, high = torch.full((f,), -2.0, dtype=torch.float64), torch.full((f,), 2.0, dtype=torch.float64)
    low[0], high[0] = -float("inf"), float("inf")  # a column the normalizer leaves unclipped
    standardizer = (shift, scale, low, high)
    assert (((x - shift) * scale).abs() > 2).any()  # some values are clipped
    head = torch.randn(n, c * h * w, dtype=torch.float64)
    assert "_StandardizedBandGridBackward" in autograd_nodes(grid_block(block, x, standardizer))
    expected = outputs_and_gradients(lambda: reference(block, x, standardizer), block, x, head)
    got = outputs_and_gradients(lambda: grid_block(block, x, standardizer), block, x, head)
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)
    # without a gradient: the torch products on the standardized input
    with torch.no_grad():
        torch.testing.assert_close(
            banded_grid_block(block, x, standardizer, band_layers(block, w)), expected[0], rtol=1e-10, atol=1e-10
        )
