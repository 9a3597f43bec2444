"""The max-pool of a unit set over its observed units, with a gradient computed in one pass.

``torch.Tensor.scatter_reduce(..., "amax")`` is the reference: its backward on the CPU is a chain of nine
tensor operations (gather, two comparisons, a scatter-add, a division, ...) over every packed row, about a tenth
of the quickstart learner's forward + backward. ``unit_max_pool`` computes the same values and the same
gradient (to the bit: ties split the gradient evenly, the zero every sample starts from counting as one of them)
in two compiled loops over the rows. Under ``torch.no_grad`` (acting, inside traced graphs) and for dtypes numba
has no type for (bfloat16 under autocast) it is ``scatter_reduce`` itself.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit


@njit(cache=True, _nrt=False)
def _segment_max(values: np.ndarray, samples: np.ndarray, out: np.ndarray) -> None:
    """out[s] = max(0, max of values[r] over the rows r of sample s); out starts at zeros."""
    for r in range(values.shape[0]):
        s = samples[r]
        for e in range(values.shape[1]):
            v = values[r, e]
            if v > out[s, e] or v != v:  # v != v: a NaN propagates, as in amax
                out[s, e] = v


@njit(cache=True, _nrt=False)
def _segment_max_backward(
    values: np.ndarray,
    samples: np.ndarray,
    pooled: np.ndarray,
    grad_pooled: np.ndarray,
    share: np.ndarray,
    grad_values: np.ndarray,
) -> None:
    """The gradient of ``_segment_max``, split evenly between the values equal to the max (the zero a sample's
    max starts from is one of them when the max is 0), as ``scatter_reduce``'s "amax" backward splits it: each
    tie gets ``grad / ties``, the same division. ``share``: scratch of ``pooled``'s shape and dtype."""
    n, width = pooled.shape
    for s in range(n):
        for e in range(width):
            share[s, e] = pooled[s, e] == 0
    for r in range(values.shape[0]):
        s = samples[r]
        for e in range(width):
            share[s, e] += values[r, e] == pooled[s, e]
    for s in range(n):
        for e in range(width):
            share[s, e] = grad_pooled[s, e] / share[s, e]
    for r in range(values.shape[0]):
        s = samples[r]
        for e in range(width):
            grad_values[r, e] = share[s, e] if values[r, e] == pooled[s, e] else 0.0


def runs_compiled(*tensors: torch.Tensor) -> bool:
    """Whether a compiled unit operation (an autograd function over numba loops) applies to ``tensors``: a
    gradient is wanted, and they are float32 or float64 CPU tensors of one dtype outside a trace. Otherwise the
    torch expression runs (acting, traced graphs, bfloat16 under autocast)."""
    dtype = tensors[0].dtype
    return (
        torch.is_grad_enabled()
        and any(t.requires_grad for t in tensors)
        and all(t.device.type == "cpu" and t.dtype == dtype for t in tensors)
        and dtype in (torch.float32, torch.float64)
        and not torch.jit.is_tracing()
    )


class _UnitMaxPool(torch.autograd.Function):
    @staticmethod
    def forward(ctx, values: torch.Tensor, samples: torch.Tensor, n: int) -> torch.Tensor:
        values = values.contiguous()
        pooled = values.new_zeros(n, values.shape[1])
        _segment_max(values.numpy(), samples.numpy(), pooled.numpy())
        ctx.save_for_backward(values, samples, pooled)
        return pooled

    @staticmethod
    def backward(ctx, grad_pooled: torch.Tensor):
        values, samples, pooled = ctx.saved_tensors
        grad_values, share = torch.empty_like(values), torch.empty_like(pooled)
        arrays = (values, samples, pooled, grad_pooled.contiguous(), share, grad_values)
        _segment_max_backward(*(a.numpy() for a in arrays))
        return grad_values, None, None


def unit_max_pool(values: torch.Tensor, samples: torch.Tensor, n: int) -> torch.Tensor:
    """[N, E]: for each of the ``n`` samples, the max of ``values`` [R, E] over its rows (``samples`` [R], the
    sample of each row) and 0; 0 for a sample with no rows. Gradient: to the arg-max rows, split between ties."""
    if runs_compiled(values):
        return _UnitMaxPool.apply(values, samples.contiguous(), n)
    out = values.new_zeros(n, values.shape[-1])
    return out.scatter_reduce(0, samples.unsqueeze(-1).expand_as(values), values, "amax", include_self=True)
