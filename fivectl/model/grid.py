"""A grid group's block: 3x3 "same" convolutions, each followed by a ReLU, over a channel-last grid.

The reference is the ``nn.Conv2d`` block itself on ``x`` [N, H, W, F] (standardized first when a normalizer's
``standardizer`` is given), flattened channel-major. With the model's kernels on, the same function runs as one
matrix product per layer with a band matrix (``kernels/grid.py``), which suits grids of a few channels better than
a convolution.
"""

from __future__ import annotations

import torch
from torch import nn

from fivectl.model.kernels import kernels_enabled
from fivectl.model.kernels.grid import banded_grid_block
from fivectl.model.normalize import standardize


def grid_block(
    block: nn.Sequential,
    x: torch.Tensor,
    standardizer: tuple[torch.Tensor, ...] | None = None,
    bands: list[torch.Tensor] | None = None,
) -> torch.Tensor:
    """``block`` (Conv2d, ReLU, ...) on ``x`` [N, H, W, F] standardized by ``standardizer`` (a normalizer's
    (shift, scale, low, high)) when given: [N, C * H * W], flattened like the convolution's [N, C, H, W] output.
    ``bands``: the block's band matrices that acting caches (``kernels.grid.band_layers``), or None."""
    if kernels_enabled():
        return banded_grid_block(block, x, standardizer, bands)
    if standardizer is not None:
        x = standardize(x, standardizer)
    return block(x.permute(0, 3, 1, 2)).flatten(1)
