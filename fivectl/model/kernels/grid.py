"""The grid block's 3x3 convolutions as matrix products (``grid.grid_block``'s kernel).

A 3x3 "same" convolution maps three neighbouring input rows to one output row by the same linear map for every
row, so a layer is one matrix product of every row's three-row window ``[N * H, 3 * W * C_in]`` with a band matrix
``[3 * W * C_in, W * C_out]`` built from the kernel. For the small grids of the schemas (a few channels on an
8 x 8 map) oneDNN's convolution is mostly set-up, forward and backward, and the products are not (see
benchmarks/RESULTS.md). The products agree with ``nn.Conv2d`` to float rounding.

- Acting (no gradient, traced graphs) multiplies by band matrices the encoder caches until a kernel changes.
- Training builds them from the kernels (differentiably) and runs each layer through ``_BandConvReLU``, whose
  backward writes each gradient once.
- Training from an observation (``_StandardizedBandGrid``) runs the whole block as one function whose
  element-wise passes are numba loops: the input standardized straight into its row windows, and backward each
  layer's window gradients folded back onto its rows and through the ReLU below in one pass.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from numba import njit
from torch import nn

from fivectl.model.kernels import runs_compiled
from fivectl.model.kernels.standardize import standardized_value
from fivectl.model.normalize import standardize


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
    """(band matrix, bias repeated along the row) of each convolution of a grid block, in order; differentiable
    with respect to the kernels when gradient is enabled."""
    layers = []
    for conv in block:
        if isinstance(conv, nn.Conv2d):
            layers += [band_matrix(conv.weight, width), conv.bias.repeat(width)]
    return layers


def row_windows(rows: torch.Tensor) -> torch.Tensor:
    """[N, H, R] -> [N * H, 3 * R]: each row beside the row above and the row below (zeros past the edges)."""
    n, h, _ = rows.shape
    padded = F.pad(rows, (0, 0, 1, 1))
    return torch.cat([padded[:, :h], padded[:, 1 : h + 1], padded[:, 2:]], dim=-1).view(n * h, -1)


def fold_row_windows(grad_windows: torch.Tensor, n: int, h: int) -> torch.Tensor:
    """The gradient of ``row_windows``: [N * H, 3 * R] -> [N, H, R], each row's three copies summed."""
    parts = grad_windows.view(n, h, 3, -1)
    grad = parts[:, :, 1].clone()
    grad[:, :-1] += parts[:, 1:, 0]  # row k was the row above of row k + 1
    grad[:, 1:] += parts[:, :-1, 2]  # and the row below of row k - 1
    return grad


class _BandConvReLU(torch.autograd.Function):
    """relu(row_windows(x) @ band + bias) with a backward that writes each gradient once (autograd's own, through
    the padding and the concatenation, filled and added three zero tensors per layer)."""

    @staticmethod
    def forward(ctx, rows: torch.Tensor, band: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        n, h, _ = rows.shape
        windows = row_windows(rows)
        out = torch.addmm(bias, windows, band).relu_()
        ctx.save_for_backward(windows, band, out)
        ctx.n_h = n, h
        return out.view(n, h, -1)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        windows, band, out = ctx.saved_tensors
        grad = torch.ops.aten.threshold_backward(grad_out.reshape(out.shape), out, 0.0)
        grad_rows = fold_row_windows(grad @ band.t(), *ctx.n_h) if ctx.needs_input_grad[0] else None
        return grad_rows, windows.t() @ grad, grad.sum(0)


def band_conv_relu(rows: torch.Tensor, band: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """One convolution + ReLU on ``rows`` [N, H, W * C_in] through its band matrix: [N, H, W * C_out]."""
    if torch.is_grad_enabled() and not torch.jit.is_tracing() and not torch.is_autocast_enabled(rows.device.type):
        return _BandConvReLU.apply(rows, band, bias)
    n, h, _ = rows.shape
    return torch.relu(torch.addmm(bias, row_windows(rows), band)).view(n, h, -1)


def banded_grid(x: torch.Tensor, layers: list[torch.Tensor]) -> torch.Tensor:
    """The grid block (convolution + ReLU per layer) on ``x`` [N, H, W, C] through ``band_layers``: [N, C_out * H
    * W], flattened channel-major like the convolution's [N, C_out, H, W] output."""
    n, h, w, _ = x.shape
    y = x.reshape(n, h, -1)
    for band, bias in zip(layers[0::2], layers[1::2], strict=True):
        y = band_conv_relu(y, band, bias)
    return y.view(n, h, w, -1).permute(0, 3, 1, 2).flatten(1)


# ------------------------------------------------------------------------------------ a whole block, from obs


@njit(cache=True, _nrt=False)
def _standardized_row_windows(
    x: np.ndarray, shift: np.ndarray, scale: np.ndarray, low: np.ndarray, high: np.ndarray, out: np.ndarray
) -> None:
    """``row_windows`` of ``clamp((x - shift) * scale, low, high)`` (``normalize.standardize`` per feature):
    x [N, H, W, F] -> out [N * H, 3 * W * F]. Each input row is standardized once and written to the (up to)
    three windows it is part of: as the row below of window y - 1, the middle of y, the row above of y + 1."""
    n, h, w, f = x.shape
    row = w * f
    for i in range(n):
        first, last = i * h, i * h + h - 1
        for j in range(row):
            out[first, j] = 0.0  # nothing above the first row
            out[last, 2 * row + j] = 0.0  # nor below the last
        for y in range(h):
            o = first + y
            for col in range(w):
                for c in range(f):
                    v = standardized_value(x[i, y, col, c], shift[c], scale[c], low[c], high[c])
                    j = col * f + c
                    out[o, row + j] = v
                    if y > 0:
                        out[o - 1, 2 * row + j] = v
                    if y < h - 1:
                        out[o + 1, j] = v


@njit(cache=True, _nrt=False)
def _row_windows(rows: np.ndarray, h: int, out: np.ndarray) -> None:
    """``row_windows`` of rows [N * H, R] -> out [N * H, 3 * R]."""
    r = rows.shape[1]
    for o in range(rows.shape[0]):
        y = o % h
        for k in range(3):
            src = o + k - 1
            if y + k - 1 < 0 or y + k - 1 >= h:
                for j in range(r):
                    out[o, k * r + j] = 0.0
            else:
                for j in range(r):
                    out[o, k * r + j] = rows[src, j]


@njit(cache=True, _nrt=False)
def _fold_through_relu(grad_windows: np.ndarray, below: np.ndarray, h: int, out: np.ndarray) -> None:
    """``threshold_backward(fold_row_windows(grad_windows), below, 0)``: each row's three window gradients
    summed in ``fold_row_windows``' order, kept where the layer below's ReLU output ``below`` [N * H, R] is > 0."""
    r = below.shape[1]
    for o in range(below.shape[0]):
        y = o % h
        for j in range(r):
            if below[o, j] <= 0:
                out[o, j] = 0.0
                continue
            v = grad_windows[o, r + j]
            if y + 1 < h:
                v += grad_windows[o + 1, j]  # this row was the row above of the next one
            if y > 0:
                v += grad_windows[o - 1, 2 * r + j]  # and the row below of the previous one
            out[o, j] = v


class _StandardizedBandGrid(torch.autograd.Function):
    """The block from raw observations ``x`` [N, H, W, F] (no gradient to them): standardized, then every
    (band, bias) layer as a product + ReLU; -> [N, C * H * W] channel-major."""

    @staticmethod
    def forward(ctx, x, standardizer, *layers):
        n, h, w, f = x.shape
        windows = x.new_empty(n * h, 3 * w * f)
        _standardized_row_windows(*(t.numpy() for t in (x, *standardizer, windows)))
        saved = []
        for i, (band, bias) in enumerate(zip(layers[0::2], layers[1::2], strict=True)):
            if i:
                rows = windows
                windows = rows.new_empty(n * h, 3 * rows.shape[1])
                _row_windows(rows.numpy(), h, windows.numpy())
            out = torch.addmm(bias, windows, band).relu_()
            saved += [windows, out]
            windows = out
        ctx.save_for_backward(*saved, *layers[0::2])
        ctx.shape = n, h, w, out.shape[1] // w
        return out.view(n, h, w, -1).permute(0, 3, 1, 2).flatten(1)

    @staticmethod
    def backward(ctx, grad_flat):
        n, h, w, c = ctx.shape
        saved = ctx.saved_tensors
        n_layers = len(saved) // 3
        windows, outputs, bands = saved[0 : 2 * n_layers : 2], saved[1 : 2 * n_layers : 2], saved[2 * n_layers :]
        rows_grad = grad_flat.reshape(n, c, h, w).permute(0, 2, 3, 1).reshape(n * h, w * c)
        grad = torch.ops.aten.threshold_backward(rows_grad, outputs[-1], 0.0)
        grads = []
        for i in reversed(range(n_layers)):
            grads = [windows[i].t() @ grad, grad.sum(0), *grads]
            if i:
                grad_windows = grad @ bands[i].t()
                grad = torch.empty_like(outputs[i - 1])
                _fold_through_relu(grad_windows.numpy(), outputs[i - 1].numpy(), h, grad.numpy())
        return None, None, *grads


def banded_grid_block(
    block: nn.Sequential,
    x: torch.Tensor,
    standardizer: tuple[torch.Tensor, ...] | None = None,
    bands: list[torch.Tensor] | None = None,
) -> torch.Tensor:
    """``grid.grid_block`` through band matrices: ``bands`` (acting's cached ``band_layers``) or, when None,
    band matrices built from ``block``'s kernels (differentiably). From an observation (``standardizer`` given)
    in training on the CPU in float32/float64 the whole block is ``_StandardizedBandGrid``; elsewhere the input
    is standardized in torch first."""
    layers = bands if bands is not None else band_layers(block, x.shape[2])
    if standardizer is None:
        return banded_grid(x, layers)
    if runs_compiled(x, *layers):
        return _StandardizedBandGrid.apply(x.contiguous(), standardizer, *layers)
    return banded_grid(standardize(x, standardizer), layers)
