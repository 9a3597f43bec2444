"""A unit set's shared two-layer MLP (paper H, "Process Set") on its observed slots only.

The reference: pick the observed slots' float and categorical columns, standardize the floats with the group's
normalizer, look the categories up in the stacked embedding table, concatenate, then Linear, ReLU, Linear, ReLU.
In training on the CPU the same function and gradients come from one autograd function (``kernels/unit_mlp.py``).
"""

from __future__ import annotations

import torch
from torch import nn

from fivectl.model.embedding import stacked_lookup
from fivectl.model.kernels import runs_compiled
from fivectl.model.kernels.unit_mlp import fused_unit_mlp
from fivectl.model.normalize import standardize


def unit_input(
    rows: torch.Tensor,
    floats: torch.Tensor | None,
    cats: torch.Tensor | None,
    standardizer: tuple[torch.Tensor, ...] | None,
    table: torch.Tensor | None,
    offsets: torch.Tensor | None,
) -> torch.Tensor:
    """The MLP's input of the slots ``rows`` [R]: their standardized float columns, then their categorical
    columns' embeddings: [R, F + K * E]."""
    parts = []
    if floats is not None:
        parts.append(standardize(floats.index_select(0, rows), standardizer))
    if cats is not None:
        parts.append(stacked_lookup(cats.index_select(0, rows), table, offsets))
    return torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0]


def unit_mlp(
    mlp: nn.Sequential,
    rows: torch.Tensor,
    floats: torch.Tensor | None,
    cats: torch.Tensor | None,
    standardizer: tuple[torch.Tensor, ...] | None,
    table: torch.Tensor | None,
    offsets: torch.Tensor | None,
) -> torch.Tensor:
    """``mlp`` on the slots ``rows`` [R] of a unit set: ``floats`` [S, F] and ``cats`` [S, K] are its flattened
    slots (None for a set without such columns), ``standardizer`` the normalizer's (shift, scale, low, high),
    ``table`` the fields' stacked embeddings [V, E] and ``offsets`` [K] each column's first row in it.
    -> [R, E_out], >= 0 after the last ReLU."""
    if floats is not None and cats is not None and runs_compiled(floats, table, *mlp.parameters()):
        return fused_unit_mlp(mlp, floats, cats, rows, standardizer, table, offsets)
    return mlp(unit_input(rows, floats, cats, standardizer, table, offsets))
