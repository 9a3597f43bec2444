"""The target head's scores on the observed units (HoK eq. 1, taken on the observed units only)."""

from __future__ import annotations

import torch

from fivectl.model.kernels import runs_compiled
from fivectl.model.kernels.attention import gathered_scores


def unit_scores(packed: torch.Tensor, samples: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """[R]: ``packed[r] . query[samples[r]]`` for the observed units ``packed`` [R, E] of the samples whose
    queries are ``query`` [N, E].

    In training on the CPU the same (to float rounding) comes from one compiled loop each way
    (``kernels/attention.py``)."""
    if runs_compiled(packed, query):
        return gathered_scores(packed, samples, query)
    # Elementwise product + sum rather than bmm with an inner size of 1: faster on CPU, forward and backward.
    return (packed * query.index_select(0, samples)).sum(-1)
