"""A unit set's observed slots through standardization, embeddings and the shared two-layer MLP as one autograd
function (``unit_mlp.unit_mlp``' kernel, for training).

In torch the unit MLP is a dozen operations per unit set (pick the observed slots' float and categorical columns,
standardize and clip, look the categories up, concatenate, Linear, ReLU, Linear, ReLU), and autograd adds as many
again backward, among them a gradient for every input column although only the embedding columns have a
parameter behind them. Each pass reads and writes the whole batch of observed units. This function computes the
same:

- the MLP's input in one compiled pass (``_gather_input``): slot ``rows[i]``'s floats standardized and clipped as
  ``normalize.standardize`` does, then its embedding rows from the stacked table;
- the layers as ``addmm`` + in-place ReLU, saving only the input and the two activations;
- backward, the products of autograd's (``ReLU`` gradient from the saved outputs), the input's gradient only for
  the embedding columns, added into the stacked table in one compiled pass (``_scatter_embedding_grad``, rows in
  the order ``index_add_`` adds them).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch import nn

from fivectl.model.kernels.standardize import standardized_value


@njit(cache=True, _nrt=False)
def _gather_input(
    floats: np.ndarray,
    cats: np.ndarray,
    rows: np.ndarray,
    shift: np.ndarray,
    scale: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    table: np.ndarray,
    offsets: np.ndarray,
    out: np.ndarray,
) -> None:
    """out[i] = (clamp((floats[r] - shift) * scale, low, high), table[cats[r, 0] + offsets[0]], ...) for
    r = rows[i]: the float columns first, then each categorical field's embedding."""
    n_float = floats.shape[1]
    width = table.shape[1]
    for i in range(rows.shape[0]):
        r = rows[i]
        for j in range(n_float):
            out[i, j] = standardized_value(floats[r, j], shift[j], scale[j], low[j], high[j])
        for f in range(cats.shape[1]):
            t = cats[r, f] + offsets[f]
            start = n_float + f * width
            for e in range(width):
                out[i, start + e] = table[t, e]


@njit(cache=True, _nrt=False)
def _scatter_embedding_grad(
    grad_embedded: np.ndarray, cats: np.ndarray, rows: np.ndarray, offsets: np.ndarray, grad_table: np.ndarray
) -> None:
    """grad_table[cats[rows[i], f] + offsets[f]] += grad_embedded[i, f * E : (f + 1) * E], in (i, f) order;
    ``grad_table`` starts at zeros."""
    width = grad_table.shape[1]
    for i in range(rows.shape[0]):
        r = rows[i]
        for f in range(cats.shape[1]):
            t = cats[r, f] + offsets[f]
            start = f * width
            for e in range(width):
                grad_table[t, e] += grad_embedded[i, start + e]


class _FusedUnitMLP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, floats, cats, rows, standardizer, offsets, table, w1, b1, w2, b2):
        x = floats.new_empty(rows.shape[0], w1.shape[1])
        arrays = (floats, cats, rows, *standardizer, table, offsets, x)
        _gather_input(*(a.numpy() for a in arrays))
        hidden = torch.addmm(b1, x, w1.t()).relu_()
        out = torch.addmm(b2, hidden, w2.t()).relu_()
        ctx.save_for_backward(cats, rows, offsets, table, x, hidden, out, w1, w2)
        ctx.n_float = floats.shape[1]
        return out

    @staticmethod
    def backward(ctx, grad_out):
        cats, rows, offsets, table, x, hidden, out, w1, w2 = ctx.saved_tensors
        grad_out = torch.ops.aten.threshold_backward(grad_out, out, 0.0)
        grad_w2, grad_b2 = grad_out.t() @ hidden, grad_out.sum(0)
        grad_hidden = torch.ops.aten.threshold_backward(grad_out @ w2, hidden, 0.0)
        # (x^T g)^T rather than g^T x: the same product, which MKL computes faster for these shapes
        grad_w1, grad_b1 = (x.t() @ grad_hidden).t(), grad_hidden.sum(0)
        grad_table = None
        if ctx.needs_input_grad[5]:
            grad_embedded = grad_hidden @ w1[:, ctx.n_float :]
            grad_table = torch.zeros_like(table)
            arrays = (grad_embedded, cats, rows, offsets, grad_table)
            _scatter_embedding_grad(*(a.numpy() for a in arrays))
        return None, None, None, None, None, grad_table, grad_w1, grad_b1, grad_w2, grad_b2


def fused_unit_mlp(
    mlp: nn.Sequential,
    floats: torch.Tensor,
    cats: torch.Tensor,
    rows: torch.Tensor,
    standardizer: tuple[torch.Tensor, ...],
    table: torch.Tensor,
    offsets: torch.Tensor,
) -> torch.Tensor:
    """``unit_mlp.unit_mlp`` of a unit set with float and categorical columns, for the Linear-ReLU-Linear-ReLU
    ``mlp`` (CPU, float32/float64, ``runs_compiled``): [R, E_out], differentiable in ``table`` and the MLP's
    parameters (not in ``floats``)."""
    first, _, second, _ = mlp
    return _FusedUnitMLP.apply(
        floats.contiguous(),
        cats.contiguous(),
        rows.contiguous(),
        standardizer,
        offsets.contiguous(),
        table,
        first.weight,
        first.bias,
        second.weight,
        second.bias,
    )
