"""Truncated backpropagation through time (paper §4 / C: the LSTM is trained on 16-step windows, each starting
from the LSTM state the rollout worker had when it played that step).

Fragments are time-major [T, B, ...]. A fragment of T = n * window steps becomes n windows per column, laid out
as columns ``w * B + b`` of a [window, n * B, ...] tensor (window index major, so teammates, contiguous in b,
stay contiguous). ``first[t]`` True means a game began at step t: the model resets its state before that step,
inside a window as at its start.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from fivectl.errors import BadInput


def map_tensors(fn: Callable[[torch.Tensor], torch.Tensor], tree: Any) -> Any:
    """Apply ``fn`` to every tensor in a tree of dicts, lists, tuples and dataclasses (an observation batch)."""
    if isinstance(tree, torch.Tensor):
        return fn(tree)
    if isinstance(tree, dict):
        return {key: map_tensors(fn, value) for key, value in tree.items()}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*(map_tensors(fn, value) for value in tree))
    if isinstance(tree, list | tuple):
        return type(tree)(map_tensors(fn, value) for value in tree)
    if dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        changes = {f.name: map_tensors(fn, getattr(tree, f.name)) for f in dataclasses.fields(tree) if f.init}
        return dataclasses.replace(tree, **changes)
    return tree


def first_from_dones(dones: torch.Tensor, first0: torch.Tensor) -> torch.Tensor:
    """first[t] = game began at step t: first[0] = ``first0`` [B] (the fragment starts a game), then
    first[t] = dones[t-1] (the game ended after the previous step)."""
    dones = dones.to(torch.bool)
    return torch.cat([first0.to(torch.bool).unsqueeze(0), dones[:-1]], dim=0)


def num_windows(length: int, window: int) -> int:
    if window < 1 or length % window != 0:
        raise BadInput(f"fragment length {length} is not a multiple of the BPTT window {window}")
    return length // window


def split_windows(x: torch.Tensor, window: int) -> torch.Tensor:
    """[T, B, ...] -> [window, (T // window) * B, ...], column w * B + b = steps w*window.. of column b."""
    n = num_windows(x.shape[0], window)
    batch = x.shape[1]
    rest = x.shape[2:]
    return x.reshape(n, window, batch, *rest).transpose(0, 1).reshape(window, n * batch, *rest)


def join_windows(x: torch.Tensor, num_columns: int) -> torch.Tensor:
    """Inverse of :func:`split_windows`: [window, n * B, ...] -> [n * window, B, ...]."""
    window, columns = x.shape[:2]
    if columns % num_columns != 0:
        raise BadInput(f"{columns} window columns are not a multiple of {num_columns} fragment columns")
    n = columns // num_columns
    rest = x.shape[2:]
    return x.reshape(window, n, num_columns, *rest).transpose(0, 1).reshape(n * window, num_columns, *rest)


def window_states(states: Any, batch_dim: int = 1) -> Any:
    """Initial states of the windows, in the column order of :func:`split_windows`.

    ``states``: a tree of tensors [n, *state_shape], entry w being the state at the start of window w (for
    an LSTM state (h, c) each [num_layers, B, H], so ``batch_dim`` = 1). Returns the tree with each tensor
    [*state_shape] whose batch dim holds n * B columns.
    """

    def merge(s: torch.Tensor) -> torch.Tensor:
        return torch.cat(list(s.unbind(0)), dim=batch_dim)

    return map_tensors(merge, states)


def select_columns(tree: Any, columns: torch.Tensor, dim: int = 1) -> Any:
    """The minibatch of window columns ``columns`` from every tensor of a tree (dim 1 for [T, N, ...])."""
    return map_tensors(lambda x: x.index_select(dim, columns.to(x.device)), tree)


def team_minibatches(
    num_columns: int, team_size: int, num_minibatches: int, generator: torch.Generator | None = None
) -> list[torch.Tensor]:
    """A random partition of window columns into minibatches that keeps each team's ``team_size`` contiguous
    columns together and in order (the cross-hero pool reads teammates as [N // k, k, ...], paper H)."""
    if num_columns % team_size != 0:
        raise BadInput(f"{num_columns} columns do not split into teams of {team_size}")
    teams = num_columns // team_size
    if not 1 <= num_minibatches <= teams:
        raise BadInput(f"cannot split {teams} teams into {num_minibatches} minibatches")
    order = torch.randperm(teams, generator=generator)
    offsets = torch.arange(team_size)
    return [
        (chunk.unsqueeze(1) * team_size + offsets).reshape(-1)
        for chunk in order.tensor_split(num_minibatches)
    ]
