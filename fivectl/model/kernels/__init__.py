"""The model's compiled fast paths, behind the layers of ``fivectl/model/``.

Every layer module (``grid.py``, ``unit_mlp.py``, ``pooling.py``, ``attention.py``, ``normalize.py``) holds one
reference implementation in plain torch and hands its inputs to a function here when the predicate below says that
function applies. Each function computes its layer's reference (``tests/model`` checks values and gradients):

- ``grid.banded_grid_block``: the grid block's 3x3 convolutions as products with band matrices, training through
  autograd functions whose element-wise passes are numba loops;
- ``unit_mlp.fused_unit_mlp``: a unit set's gather, standardization, embedding lookup and two-layer MLP in one
  autograd function;
- ``pooling.segment_max_pool``: the max over each sample's observed units, with its gradient;
- ``attention.gathered_scores``: each observed unit's dot product with its sample's query, with its gradient;
- ``moments.column_moments``: the normalizer's per-column batch mean and variance;
- ``standardize.standardized_value``: the normalizer's standardization of one value, for the loops above.

Setting the environment variable ``FIVECTL_MODEL_KERNELS=0`` (read at import; tests set ``ENABLED``) runs every
layer's reference path instead.
"""

from __future__ import annotations

import os

import torch

ENABLED = os.environ.get("FIVECTL_MODEL_KERNELS", "1") != "0"
"""Whether the layers use the functions of this package at all."""

NUMBA_DTYPES = (torch.float32, torch.float64)


def kernels_enabled() -> bool:
    return ENABLED


def numba_can_run(*tensors: torch.Tensor) -> bool:
    """Whether a numba loop can read and write ``tensors``: kernels enabled, and CPU tensors of one dtype numba has
    a type for (not bfloat16). CUDA (or any other device) takes the torch path."""
    dtype = tensors[0].dtype
    return (
        ENABLED
        and dtype in NUMBA_DTYPES
        and all(t.device.type == "cpu" and t.dtype == dtype for t in tensors)
    )


def runs_compiled(*tensors: torch.Tensor) -> bool:
    """Whether an autograd function over numba loops applies to ``tensors``: ``numba_can_run`` and a gradient is
    wanted (training), outside a trace and outside autocast. Acting (no gradient), traced graphs and the learner's
    bfloat16 autocast take the torch path."""
    return (
        torch.is_grad_enabled()
        and any(t.requires_grad for t in tensors)
        and numba_can_run(*tensors)
        and not torch.jit.is_tracing()
        and not torch.is_autocast_enabled(tensors[0].device.type)
    )
