"""Each observed unit's score against its sample's query in one compiled loop each way (``attention.unit_scores``'
kernel).

The torch expression is a gather of the queries (one row per unit), a product and a sum, and backward two more
products and a scatter-add: five passes over ``[units, E]`` tensors where these loops make one. The two agree to
float rounding (the sum's order differs).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit


@njit(cache=True, _nrt=False)
def _scores(packed: np.ndarray, samples: np.ndarray, query: np.ndarray, out: np.ndarray) -> None:
    for r in range(packed.shape[0]):
        s = samples[r]
        total = packed.dtype.type(0.0)
        for e in range(packed.shape[1]):
            total += packed[r, e] * query[s, e]
        out[r] = total


@njit(cache=True, _nrt=False)
def _scores_backward(
    packed: np.ndarray,
    samples: np.ndarray,
    query: np.ndarray,
    grad_scores: np.ndarray,
    grad_packed: np.ndarray,
    grad_query: np.ndarray,
) -> None:
    """``grad_query`` starts at zeros; rows of one sample add up in row order, as ``index_add_`` does."""
    for r in range(packed.shape[0]):
        s = samples[r]
        g = grad_scores[r]
        for e in range(packed.shape[1]):
            grad_packed[r, e] = g * query[s, e]
            grad_query[s, e] += g * packed[r, e]


class _GatheredScores(torch.autograd.Function):
    @staticmethod
    def forward(ctx, packed: torch.Tensor, samples: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        packed, query = packed.contiguous(), query.contiguous()
        scores = packed.new_empty(packed.shape[0])
        _scores(packed.numpy(), samples.numpy(), query.numpy(), scores.numpy())
        ctx.save_for_backward(packed, samples, query)
        return scores

    @staticmethod
    def backward(ctx, grad_scores: torch.Tensor):
        packed, samples, query = ctx.saved_tensors
        grad_packed, grad_query = torch.empty_like(packed), torch.zeros_like(query)
        arrays = (packed, samples, query, grad_scores.contiguous(), grad_packed, grad_query)
        _scores_backward(*(a.numpy() for a in arrays))
        return grad_packed, None, grad_query


def gathered_scores(packed: torch.Tensor, samples: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """``attention.unit_scores`` (CPU, float32/float64, ``runs_compiled``): [R] = ``packed[r] . query[samples[r]]``."""
    return _GatheredScores.apply(packed, samples.contiguous(), query)
