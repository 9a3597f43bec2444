"""The max-pool of a unit set over its observed units in two compiled loops (``pooling.unit_max_pool``' kernel).

``scatter_reduce(..., "amax")``'s backward on the CPU is a chain of tensor operations over every packed row
(gather, two comparisons, a scatter-add, a division, ...); these loops give the same values and the same gradient,
to the bit: ties split the gradient evenly, the zero every sample starts from counting as one of them.
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


class _SegmentMaxPool(torch.autograd.Function):
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


def segment_max_pool(values: torch.Tensor, samples: torch.Tensor, n: int) -> torch.Tensor:
    """``pooling.unit_max_pool`` of ``values`` [R, E] (CPU, float32/float64, ``runs_compiled``): [n, E]."""
    return _SegmentMaxPool.apply(values, samples.contiguous(), n)
