"""Moving tensors from a parent network into a larger child network by parameter name and index.

A surgery is described by a :class:`TensorMap` per child ``state_dict`` entry that changes: where the parent's
entries go (per dimension, a slice or the child positions of the parent's indices) and which child entries are
set to zero afterwards (the outgoing weights of new units or new inputs, so the function is unchanged: paper B,
W' = [W 0]). Entries of neither kind keep the child's fresh initialization (the random incoming weights of new
units, W1' = [W1; R]). Entries without a map are copied unchanged under the same name.

The same maps move Adam's moments, starting from zeros instead of a fresh initialization: new entries have no
gradient history. The optimizer's state is keyed by parameter position, so it is translated to names with each
network's own parameter order first (:func:`moments_by_name`) and never matched by position across networks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import torch

from fivectl.errors import BadInput

Index = slice | torch.Tensor
"""Positions along one dimension of the child tensor: a slice, or a LongTensor (one position per parent index)."""


@dataclass
class TensorMap:
    source: str | None  # the parent's name; None: a new tensor that keeps its fresh value
    dest: tuple[Index, ...] = ()  # per leading dimension; missing dimensions are taken whole
    zero: list[tuple[Index, ...]] = field(default_factory=list)  # child regions set to 0 after the copy


def _grid(index: tuple[Index, ...], shape: torch.Size) -> tuple[Index, ...]:
    """An index usable on both sides of an assignment. A single position list keeps its dimension in place;
    with two or more, every dimension becomes a position list broadcast against the others (an outer product),
    so ``target[grid]`` has the shape of the block being written."""
    if sum(isinstance(ix, torch.Tensor) for ix in index) <= 1:
        return index
    full = list(index) + [slice(None)] * (len(shape) - len(index))
    lists = [ix if isinstance(ix, torch.Tensor) else torch.arange(*ix.indices(shape[d])) for d, ix in enumerate(full)]
    return tuple(ix.view([-1 if k == d else 1 for k in range(len(shape))]) for d, ix in enumerate(lists))


def place(target: torch.Tensor, source: torch.Tensor, dest: tuple[Index, ...]) -> None:
    """``target[dest] = source``, with ``dest`` as in :class:`TensorMap`."""
    if not dest:
        if source.dim() == 0 and target.dim() == 1:
            target.fill_(source)  # one value for every entry (a normalizer's single count in older checkpoints)
            return
        if target.shape != source.shape:
            raise ValueError(f"shape {tuple(source.shape)} cannot be copied into {tuple(target.shape)}")
        target.copy_(source)
        return
    target[_grid(dest, target.shape)] = source.to(target.dtype)


def zero_regions(target: torch.Tensor, regions: Iterable[tuple[Index, ...]]) -> None:
    for region in regions:
        target[_grid(region, target.shape)] = 0


def map_state(
    parent: dict[str, torch.Tensor], fresh: dict[str, torch.Tensor], maps: dict[str, TensorMap]
) -> dict[str, torch.Tensor]:
    """The child state: ``fresh`` (the child network's own initialization) with the parent's values moved in."""
    child = {}
    for name, init in fresh.items():
        m = maps.get(name, TensorMap(name if name in parent else None))
        value = init.clone()
        if m.source is not None:
            place(value, parent[m.source], m.dest)
        zero_regions(value, m.zero)
        child[name] = value
    unused = set(parent) - {maps.get(n, TensorMap(n)).source for n in fresh}
    if unused:
        raise ValueError(f"the surgery would drop parent tensors {sorted(unused)[:3]}")
    return child


def map_moment(parent_value: torch.Tensor | None, child_shape: torch.Size, m: TensorMap) -> torch.Tensor:
    """A moment of the child's parameter: the parent's where the parent had the entry, zero elsewhere."""
    out = torch.zeros(child_shape, dtype=parent_value.dtype if parent_value is not None else torch.float32)
    if parent_value is not None:
        place(out, parent_value, m.dest)
    zero_regions(out, m.zero)
    return out


def moments_by_name(optimizer_state: dict, names: list[str]) -> dict[str, dict]:
    """Adam's per-parameter state keyed by parameter name (``names``: the network's parameters in the order the
    optimizer was given them)."""
    order = [i for group in optimizer_state["param_groups"] for i in group["params"]]
    if len(order) != len(names):
        raise BadInput(
            f"the optimizer holds {len(order)} parameters, the network {len(names)}: not this network's optimizer"
        )
    by_position = dict(zip(order, names, strict=True))
    return {by_position[i]: state for i, state in optimizer_state["state"].items()}


def map_optimizer(
    optimizer_state: dict, parent_names: list[str], child_params: dict[str, torch.Size], maps: dict[str, TensorMap]
) -> dict:
    """The child's optimizer ``state_dict``: moments moved by name, zero for new entries; a parameter new as a
    whole has no state (Adam starts it at step 0)."""
    parent_state = moments_by_name(optimizer_state, parent_names)
    names = list(child_params)
    state = {}
    for position, name in enumerate(names):
        m = maps.get(name, TensorMap(name if name in parent_state else None))
        old = parent_state.get(m.source) if m.source is not None else None
        if old is None:
            continue
        entry = dict(old)
        for key in ("exp_avg", "exp_avg_sq"):
            entry[key] = map_moment(old[key], child_params[name], m)
        state[position] = entry
    groups = optimizer_state["param_groups"]
    if len(groups) != 1:
        raise BadInput(f"the optimizer has {len(groups)} parameter groups; surgery knows one")
    return {"state": state, "param_groups": [{**groups[0], "params": list(range(len(names)))}]}
