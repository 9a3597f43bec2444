"""Tiny networks over schema v1 (read through ``array_specs``): fast enough for many small checks."""

from __future__ import annotations

import torch

from fivectl.config.model import ModelConfig
from fivectl.model import PolicyNet
from fivectl.model.synthetic import random_obs
from fivectl.schema import load_schema

TINY = dict(
    unit_embed=8,
    unit_hidden=8,
    cat_embed=4,
    grid_channels=2,
    fc_size=16,
    lstm_size=16,
    attention_size=8,
    aux_hidden=8,
)


def tiny_cfg(**overrides) -> ModelConfig:
    return ModelConfig(**{**TINY, **overrides})


def schema_v1():
    return load_schema(1)


def make_net(schema, team_size: int = 1, seed: int = 0, **overrides) -> PolicyNet:
    torch.manual_seed(seed)
    return PolicyNet(schema, tiny_cfg(**overrides), team_size)


def make_obs(schema, lead: tuple[int, ...], seed: int = 0) -> dict[str, torch.Tensor]:
    return random_obs(schema, lead, torch.Generator().manual_seed(seed))


def sample_window(net: PolicyNet, obs, first) -> tuple[torch.Tensor, torch.Tensor]:
    """Act step by step over obs [T, B, ...]: the sampled actions [T, B, 4] and their log-probs [T, B]."""
    t_total, b = first.shape
    state = net.initial_state(b)
    actions, logprobs = [], []
    for t in range(t_total):
        out = net.act({k: v[t] for k, v in obs.items()}, state, first[t])
        state = out.state
        actions.append(out.actions)
        logprobs.append(out.logprob)
    return torch.stack(actions), torch.stack(logprobs)


def autograd_nodes(out: torch.Tensor) -> set[str]:
    """The type names of every node of ``out``'s backward graph (which functions computed it)."""
    seen, names, stack = set(), set(), [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names.add(type(node).__name__)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return names
