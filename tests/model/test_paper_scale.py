"""The paper-scale network (4096-unit LSTM) builds and trains one step on CPU (slow: ~1 GB of weights)."""

from __future__ import annotations

import pytest
import torch
from model_helpers import make_obs, sample_window

from fivectl.config import load_recipe
from fivectl.model import PolicyNet
from fivectl.schema import load_schema


@pytest.mark.slow
def test_paper_scale_forward_backward_on_cpu(repo):
    recipe = load_recipe(repo / "recipes" / "paper-scale.toml")
    schema = load_schema(recipe.model.schema_version)
    torch.manual_seed(0)
    net = PolicyNet(schema, recipe.model, recipe.game.team_size)
    assert sum(p.numel() for p in net.parameters()) > 150_000_000
    t, b = 2, recipe.game.team_size
    obs = make_obs(schema, (t, b))
    first = torch.zeros(t, b, dtype=torch.bool)
    first[0] = True
    actions, logprob = sample_window(net, obs, first)
    ev = net.evaluate(obs, actions, net.initial_state(b), first)
    torch.testing.assert_close(ev.logprob, logprob, atol=1e-4, rtol=1e-4)
    (-ev.logprob.mean() + ev.value.square().mean()).backward()
    grad = net.lstm.weight_hh_l0.grad
    assert grad is not None and torch.isfinite(grad).all() and grad.abs().max() > 0
