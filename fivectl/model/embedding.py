"""Categorical columns through their fields' embedding tables stacked into one (``ObsEncoder.stacked_embeddings``)."""

from __future__ import annotations

import torch


def stacked_lookup(cats: torch.Tensor, table: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """The embeddings of ``cats`` [..., K] (one column per categorical element, field after field): rows
    ``cats + offsets`` of ``table`` [V, E], concatenated per item -> [..., K * E].

    One ``index_select`` in the stacked table rather than one ``nn.Embedding`` call per field: the same rows in the
    same order, and its backward adds each row's gradient with ``index_add_``, which on the CPU is faster than the
    embedding's backward (it adds one row at a time); the gradient reaches each field's table through the
    stacking."""
    index = cats.long() + offsets
    rows = table.index_select(0, index.reshape(-1))
    return rows.view(*index.shape[:-1], index.shape[-1] * table.shape[1])
