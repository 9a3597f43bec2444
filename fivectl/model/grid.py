"""A grid group's 3x3 convolutions as matrix products, for acting.

The quickstart's terrain grid is 8 x 8 with 2 and then 4 channels: oneDNN's convolution on a hundred such grids
costs about 0.2 ms a layer, mostly set-up, which was a seventh of a worker's whole forward pass. A 3x3 "same"
convolution maps three neighbouring input rows to one output row by the same linear map for every row, so a layer
is one matrix product of every row's three-row window ``[N * H, 3 * W * C_in]`` with a band matrix
``[3 * W * C_in, W * C_out]`` built from the kernel once per parameter version. Training keeps ``nn.Conv2d``
(its backward needs the kernel's gradient); the two agree to float rounding.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def band_matrix(weight: torch.Tensor, width: int) -> torch.Tensor:
    """``weight`` [C_out, C_in, 3, 3] -> [3 * width * C_in, width * C_out]: row ``(dy, x_in, c_in)`` of a
    three-row window to column ``(x_out, c_out)``, zero where ``x_in`` is not within one of ``x_out``."""
    c_out, c_in, k_h, k_w = weight.shape
    # shift[dx, x_in, x_out] = 1 where x_in = x_out + dx - 1: the padding columns are simply absent
    shift = torch.stack(
        [torch.eye(width, dtype=weight.dtype, device=weight.device).roll(dx - k_w // 2, 0) for dx in range(k_w)]
    )
    for dx in range(k_w):
        offset = dx - k_w // 2
        if offset > 0:
            shift[dx, :offset] = 0  # rolled around from the other edge
        elif offset < 0:
            shift[dx, offset:] = 0
    band = torch.einsum("oiyx,xab->yaibo", weight, shift)  # [dy, x_in, c_in, x_out, c_out]
    return band.reshape(k_h * width * c_in, width * c_out)


def band_layers(block: nn.Sequential, width: int) -> list[torch.Tensor]:
    """(band matrix, bias repeated along the row) of each convolution of a grid block, in order."""
    layers = []
    for conv in block:
        if isinstance(conv, nn.Conv2d):
            layers += [band_matrix(conv.weight.detach(), width), conv.bias.detach().repeat(width)]
    return layers


def banded_grid(x: torch.Tensor, layers: list[torch.Tensor]) -> torch.Tensor:
    """The grid block (convolution + ReLU per layer) on ``x`` [N, H, W, C] through ``band_layers``: [N, C_out * H
    * W], flattened channel-major like the convolution's [N, C_out, H, W] output."""
    n, h, w, _ = x.shape
    y = x
    for band, bias in zip(layers[0::2], layers[1::2], strict=True):
        rows = F.pad(y.reshape(n, h, -1), (0, 0, 1, 1))  # a zero row above and below
        windows = torch.cat([rows[:, :h], rows[:, 1 : h + 1], rows[:, 2:]], dim=-1)  # [N, H, 3 * W * C_in]
        y = torch.relu(torch.addmm(bias, windows.reshape(n * h, -1), band)).view(n, h, w, -1)
    return y.permute(0, 3, 1, 2).flatten(1)
