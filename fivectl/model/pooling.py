"""The max-pool of a unit set over its observed units (paper H, "Process Set")."""

from __future__ import annotations

import torch

from fivectl.model.kernels import runs_compiled
from fivectl.model.kernels.pooling import segment_max_pool


def unit_max_pool(values: torch.Tensor, samples: torch.Tensor, n: int) -> torch.Tensor:
    """[N, E]: for each of the ``n`` samples, the max of ``values`` [R, E] over its rows (``samples`` [R], the
    sample of each row) and 0; 0 for a sample with no rows. Gradient: to the arg-max rows, split between ties
    (the zero every sample starts from counting as one of them).

    In training on the CPU the same values and gradient, to the bit, come from compiled loops
    (``kernels/pooling.py``)."""
    if runs_compiled(values):
        return segment_max_pool(values, samples, n)
    out = values.new_zeros(n, values.shape[-1])
    return out.scatter_reduce(0, samples.unsqueeze(-1).expand_as(values), values, "amax", include_self=True)
