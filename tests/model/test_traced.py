"""Acting through traced graphs (``fivectl.model.traced``): the same outputs as eager ``act``, bit for bit."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from model_helpers import make_net, make_obs

from fivectl.config import load_recipe
from fivectl.model import ActOutput, PolicyNet
from fivectl.model.synthetic import random_obs
from fivectl.model.traced import TracedActor
from fivectl.schema import load_schema

RECIPES = Path(__file__).resolve().parents[2] / "recipes"


def outputs(out: ActOutput) -> list[torch.Tensor]:
    aux = [out.aux[k] for k in sorted(out.aux)] if out.aux is not None else []
    return [out.actions, out.logprob, out.value, out.win_prob, *out.state, *aux]


def assert_same(a: ActOutput, b: ActOutput) -> None:
    assert len(outputs(a)) == len(outputs(b))
    for x, y in zip(outputs(a), outputs(b), strict=True):
        assert torch.equal(x, y)


def act_both(net: PolicyNet, actor: TracedActor, seed: int, *args, **kwargs) -> tuple[ActOutput, ActOutput]:
    """Eager and traced act from the same random state."""
    torch.manual_seed(seed)
    eager = net.act(*args, **kwargs)
    torch.manual_seed(seed)
    traced = actor.act(*args, **kwargs)
    return eager, traced


def recipe_net(recipe: str) -> PolicyNet:
    cfg = load_recipe(RECIPES / recipe, [])
    torch.manual_seed(0)
    return PolicyNet(load_schema(cfg.model.schema_version), cfg.model, cfg.game.team_size)


@pytest.mark.parametrize("recipe", ["quickstart.toml", "five-v-five-quick.toml"])
def test_traced_act_equals_eager_act_as_weights_and_statistics_change_in_place(recipe):
    net = recipe_net(recipe)
    actor = TracedActor(net)
    b = 4 * net.team_size
    state = tuple(s.normal_() for s in net.initial_state(b))
    first = torch.zeros(b, dtype=torch.bool)
    first[1] = True
    for step in range(3):
        obs = random_obs(net.schema, (b,), torch.Generator().manual_seed(step))
        for with_aux in (False, True):
            eager, traced = act_both(net, actor, step, obs, state, first, with_aux=with_aux)
            assert_same(eager, traced)
        # what a rollout worker's parameter refresh does: copy into the same tensors
        with torch.no_grad():
            for p in net.parameters():
                p.add_(0.05 * torch.randn_like(p))
        net.update_normalizers(random_obs(net.schema, (5, b), torch.Generator().manual_seed(10 + step)))
    assert not actor.eager
    assert len(actor.graphs) == 2  # one per flag combination, reused across calls


def test_the_graphs_follow_new_weights_rather_than_the_ones_traced(schema):
    net = make_net(schema)
    actor = TracedActor(net)
    obs, state, first = make_obs(schema, (6,)), net.initial_state(6), torch.zeros(6, dtype=torch.bool)
    with torch.no_grad():
        actor.act(obs, state, first)
        before = actor.act(obs, state, first, deterministic=True).value
        net.heads["value"].bias.add_(1.0)
        after = actor.act(obs, state, first, deterministic=True).value
    torch.testing.assert_close(after, before + 1.0)


def test_replaced_parameters_drop_the_graphs(schema):
    net = make_net(schema)
    actor = TracedActor(net)
    obs, state, first = make_obs(schema, (6,)), net.initial_state(6), torch.zeros(6, dtype=torch.bool)
    actor.act(obs, state, first)
    net._apply(lambda t: t.clone())  # new tensors, as a move to another device makes
    actor.act(obs, state, first)  # a graph of the old tensors would still see the old weights
    with torch.no_grad():
        net.heads["value"].bias.add_(1.0)
    eager, traced = act_both(net, actor, 3, obs, state, first)
    assert_same(eager, traced)


def test_a_batch_size_gets_its_own_graph(schema):
    net = make_net(schema, team_size=2)
    actor = TracedActor(net)
    for b in (4, 8, 4):
        obs, state = make_obs(schema, (b,), seed=b), net.initial_state(b)
        eager, traced = act_both(net, actor, b, obs, state, torch.ones(b, dtype=torch.bool))
        assert_same(eager, traced)
    assert sorted(key[0] for key in actor.graphs) == [4, 8]


def test_acting_goes_on_eagerly_when_tracing_fails(schema, monkeypatch):
    net = make_net(schema)
    actor = TracedActor(net)
    obs, state, first = make_obs(schema, (6,)), net.initial_state(6), torch.zeros(6, dtype=torch.bool)

    def no_tracer(*args, **kwargs):
        raise RuntimeError("no TorchScript here")

    monkeypatch.setattr(torch.jit, "trace", no_tracer)
    torch.manual_seed(0)
    with pytest.warns(RuntimeWarning, match="no TorchScript here"):
        first_out = actor.act(obs, state, first)
    torch.manual_seed(0)
    assert_same(net.act(obs, state, first), first_out)  # the random stream is the one eager act had
    assert actor.eager
    eager, traced = act_both(net, actor, 1, obs, state, first)
    assert_same(eager, traced)


def test_a_graph_that_differs_from_eager_is_not_used(schema, monkeypatch):
    net = make_net(schema)
    actor = TracedActor(net)
    obs, state, first = make_obs(schema, (6,)), net.initial_state(6), torch.zeros(6, dtype=torch.bool)
    real_trace = torch.jit.trace

    def off_by_one_trace(module, inputs, **kwargs):
        graph = real_trace(module, inputs, **kwargs)
        return lambda *args: tuple(t + 1 if i == 2 else t for i, t in enumerate(graph(*args)))  # value + 1

    monkeypatch.setattr(torch.jit, "trace", off_by_one_trace)
    with pytest.warns(RuntimeWarning, match="differ"):
        actor.act(obs, state, first)
    assert actor.eager and not actor.graphs
