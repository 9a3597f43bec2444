"""Trunk: cross-hero pool, LSTM resets, gradient flow of the auxiliary heads, normalizers, input layout."""

from __future__ import annotations

import pytest
import torch
from model_helpers import make_net, make_obs, sample_window, schema_v1

from fivectl.errors import BadInput
from fivectl.model import cross_hero_pool, field_input_slices, run_lstm
from fivectl.model.encoder import UnitEmbeddings, normalize_mask
from fivectl.model.layout import group_fc_columns


def lstm_inputs(net, obs, first) -> torch.Tensor:
    """What the LSTM receives (the cross-hero pooled vectors), captured by a forward hook."""
    seen = []
    handle = net.lstm.register_forward_hook(lambda mod, args, out: seen.append(args[0].detach()))
    with torch.no_grad():
        net.evaluate(
            obs, torch.zeros(*first.shape, 4, dtype=torch.long), net.initial_state(first.shape[1]), first
        )
    handle.remove()
    return torch.cat(seen)


def test_cross_hero_pool_function_takes_the_team_max_of_the_first_columns():
    x = torch.randn(2, 6, 8)  # [T, B = 2 teams of 3, F]
    y = cross_hero_pool(x, team_size=3, width=2)
    teams = x.view(2, 2, 3, 8)
    expected = teams[..., :2].amax(dim=2, keepdim=True).expand(2, 2, 3, 2).reshape(2, 6, 2)
    torch.testing.assert_close(y[..., :2], expected)
    torch.testing.assert_close(y[..., 2:], x[..., 2:])


def test_a_teammates_input_reaches_only_the_pooled_quarter_of_the_others(schema):
    net = make_net(schema, team_size=3, fc_size=16)
    assert net.pool_width == 4
    obs = make_obs(schema, (2, 6))
    first = torch.ones(2, 6, dtype=torch.bool)
    base = lstm_inputs(net, obs, first)
    changed = {k: v.clone() for k, v in obs.items()}
    key = f"{first_group(schema, 'vector').name}.float"
    changed[key][:, 1] += 50.0  # hero 1 of team 0 sees something very different
    after = lstm_inputs(net, changed, first)
    diff = (after - base).abs()
    teammates, other_team = [0, 2], [3, 4, 5]
    assert diff[:, teammates, :4].max() > 0
    assert diff[:, teammates, 4:].max() == 0
    assert diff[:, other_team].max() == 0
    assert diff[:, 1, 4:].max() > 0  # its own unpooled columns do change


def test_team_batch_must_hold_whole_teams(schema):
    net = make_net(schema, team_size=2)
    obs = make_obs(schema, (3,))
    with pytest.raises(BadInput, match="teams of 2"):
        net.act(obs, net.initial_state(3), torch.ones(3, dtype=torch.bool))


def test_run_lstm_matches_a_step_by_step_reset_reference():
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(5, 7)
    x = torch.randn(10, 4, 5)
    first = torch.zeros(10, 4, dtype=torch.bool)
    first[0, 2] = first[3, 1] = first[3, 0] = first[7, 1] = True
    state = (torch.randn(1, 4, 7), torch.randn(1, 4, 7))
    out, (h, c) = run_lstm(lstm, x, state, first)
    rh, rc = state
    ref = []
    for t in range(10):
        keep = (~first[t]).float()[None, :, None]
        o, (rh, rc) = lstm(x[t : t + 1], (rh * keep, rc * keep))
        ref.append(o)
    torch.testing.assert_close(out, torch.cat(ref), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(h, rh, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(c, rc, atol=1e-6, rtol=1e-5)


def test_state_resets_at_first_so_earlier_steps_do_not_matter(schema):
    net = make_net(schema)
    obs = make_obs(schema, (8, 3))
    first = torch.zeros(8, 3, dtype=torch.bool)
    first[5, 1] = True
    actions = torch.zeros(8, 3, 4, dtype=torch.long)
    state0 = (torch.randn(1, 3, 16), torch.randn(1, 3, 16))
    base = net.evaluate(obs, actions, state0, first).value.detach()
    changed = {k: v.clone() for k, v in obs.items()}
    changed[f"{first_group(schema, 'vector').name}.float"][:5] += 3.0
    after = net.evaluate(changed, actions, (state0[0] * 2, state0[1]), first).value.detach()
    torch.testing.assert_close(after[5:, 1], base[5:, 1])
    assert (after[5:, 0] - base[5:, 0]).abs().max() > 0  # no reset there: the past still matters


def trunk_grads(net) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in net.named_parameters() if n.startswith(("encoder", "fc", "lstm"))}


def run_loss(net, obs, first, actions, aux_weight: float = 0.0, win_weight: float = 0.0):
    net.zero_grad()
    ev = net.evaluate(obs, actions, net.initial_state(first.shape[1]), first)
    loss = -ev.logprob.mean() + ev.value.square().mean()
    loss = loss + aux_weight * sum(v.square().mean() for v in ev.aux.values())
    loss = loss + win_weight * torch.nn.functional.binary_cross_entropy_with_logits(
        ev.win_logit, torch.ones_like(ev.win_logit)
    )
    loss.backward()


def test_stop_gradient_aux_heads_leave_the_trunk_gradient_unchanged(schema):
    net = make_net(schema)
    obs = make_obs(schema, (4, 2))
    first = torch.ones(4, 2, dtype=torch.bool)
    actions, _ = sample_window(net, obs, first)
    run_loss(net, obs, first, actions)
    without = trunk_grads(net)
    run_loss(net, obs, first, actions, aux_weight=10.0)
    with_aux = trunk_grads(net)
    for name in without:
        torch.testing.assert_close(with_aux[name], without[name], rtol=0, atol=0)
    assert net.aux["networth_rank"][0].weight.grad.abs().max() > 0
    assert net.aux["objectives"][0].weight.grad.abs().max() > 0


def test_win_probability_gradient_reaches_the_trunk_scaled(schema):
    obs = make_obs(schema, (4, 2))
    first = torch.zeros(4, 2, dtype=torch.bool)
    first[0] = True
    actions = torch.zeros(4, 2, 4, dtype=torch.long)
    grads = {}
    for weight in (1.0, 0.01):
        net = make_net(schema, win_prob_grad_weight=weight)
        net.zero_grad()
        ev = net.evaluate(obs, actions, net.initial_state(2), first)
        ev.win_logit.sum().backward()
        grads[weight] = (trunk_grads(net), net.aux["win"][0].weight.grad.clone())
    full, small = grads[1.0], grads[0.01]
    for name, g in full[0].items():
        torch.testing.assert_close(small[0][name], 0.01 * g, rtol=1e-4, atol=1e-9)
    assert full[0]["lstm.weight_hh_l0"].abs().max() > 0 and full[0]["fc.weight"].abs().max() > 0
    torch.testing.assert_close(small[1], full[1])  # the head itself learns at full rate


def test_normalizers_use_only_observed_units_and_running_float_columns(schema):
    net = make_net(schema)
    obs = make_obs(schema, (6, 4))
    group = first_group(schema, "unitset")
    x, observed = obs[f"{group.name}.float"], obs[f"{group.name}.mask"]
    x[~observed] = 1000.0  # padding must not enter the statistics
    net.update_normalizers(obs)
    valid = x[observed].double()
    norm = net.encoder.norms[group.name]
    torch.testing.assert_close(norm.mean, valid.mean(0))
    torch.testing.assert_close(norm.var, valid.var(0, unbiased=False))
    mask = normalize_mask(group)
    for f in group.float_fields:
        running = f.kind == "float" and f.norm == "running"
        assert mask[group.float_columns()[f.name]].eq(running).all(), f.name
    assert mask.any() and not mask.all()
    assert f"encoder.norms.{group.name}.mean" in net.state_dict()


def first_group(schema, kind: str, categorical: bool = False):
    return next(g for g in schema.groups if g.kind == kind and (g.cat_fields if categorical else g.n_float))


def field_cases():
    """One field of each kind of input: unit float, vector float, vector and unit categoricals, grid channel."""
    schema = schema_v1()
    unitset, vector, grid = (first_group(schema, k) for k in ("unitset", "vector", "grid"))
    running = next(f for f in unitset.float_fields if f.kind == "float" and f.norm == "running")
    return [
        (unitset.name, running.name),
        (vector.name, vector.float_fields[-1].name),
        (first_group(schema, "vector", True).name, first_group(schema, "vector", True).cat_fields[-1].name),
        (first_group(schema, "unitset", True).name, first_group(schema, "unitset", True).cat_fields[0].name),
        (grid.name, grid.float_fields[-1].name),
    ]


@pytest.mark.parametrize(("group", "field"), field_cases())
def test_zeroing_a_fields_input_columns_makes_the_network_ignore_it(schema, group, field):
    net = make_net(schema)
    slices = field_input_slices(schema, net.cfg, group, field)
    params = dict(net.named_parameters())
    with torch.no_grad():
        for s in slices:
            if s.param in params:
                params[s.param].index_fill_(s.dim, torch.arange(s.index.start, s.index.stop), 0.0)
    obs = make_obs(schema, (3, 2))
    first = torch.ones(3, 2, dtype=torch.bool)
    g = schema.group(group)
    changed = {k: v.clone() for k, v in obs.items()}
    if field in g.float_columns():
        changed[f"{group}.float"][..., g.float_columns()[field]] += 2.0
    else:
        changed[f"{group}.cat"][..., g.cat_columns()[field]] = 0
    actions = torch.zeros(3, 2, 4, dtype=torch.long)
    with torch.no_grad():
        base = net.evaluate(obs, actions, net.initial_state(2), first).value
        after = net.evaluate(changed, actions, net.initial_state(2), first).value
    torch.testing.assert_close(after, base)
    # and the same change is visible when the columns are live
    fresh = make_net(schema)
    with torch.no_grad():
        live = fresh.evaluate(obs, actions, fresh.initial_state(2), first).value
        live_after = fresh.evaluate(changed, actions, fresh.initial_state(2), first).value
    assert (live - live_after).abs().max() > 0


def test_group_fc_columns_match_the_encoder(schema):
    net = make_net(schema)
    cols = group_fc_columns(schema, net.cfg)
    assert {k: v.index for k, v in cols.items()} == net.encoder.output_slices
    assert max(v.index.stop for v in cols.values()) == net.fc.in_features


def test_unit_sets_run_only_observed_slots_but_equal_running_every_slot_then_masking(schema):
    """The encoder packs the observed slots of a unit set before its MLP; the result and the parameters'
    gradients must be those of running every slot and zeroing the empty ones (the straightforward version)."""
    net = make_net(schema, seed=3)
    obs = make_obs(schema, (12,), seed=5)
    encoder = net.encoder
    for g in schema.groups:
        if g.kind != "unitset":
            continue
        mask = obs[f"{g.name}.mask"]
        assert mask.any() and not mask.all(), "the check needs both observed and empty slots"
        mlp = encoder.unitsets[g.name]
        units = encoder.observed_units(g, obs)
        packed = units.dense()
        assert torch.equal(units.packed, packed.reshape(-1, packed.shape[-1])[units.rows])
        assert torch.equal(units.samples, mask.nonzero()[:, 0])
        packed.square().sum().backward()
        packed_grads = [p.grad.clone() for p in mlp.parameters()]
        net.zero_grad()
        every_slot = mlp(encoder.group_input(g, obs)) * mask.unsqueeze(-1).to(torch.float32)
        every_slot.square().sum().backward()
        assert torch.allclose(packed, every_slot, atol=1e-6)
        assert (packed[~mask] == 0).all()
        for got, want in zip(packed_grads, (p.grad for p in mlp.parameters()), strict=True):
            assert torch.allclose(got, want, atol=1e-5)
        net.zero_grad()


def test_slot_pooling_takes_the_max_over_observed_units_and_its_gradient_equals_amaxs_without_positive_ties():
    """The unit-set pool reduces the observed units alone (``UnitEmbeddings.pooled``); it must give amax over
    every slot (empty ones 0), and the same gradient wherever the max is unique (zeros from the ReLU get none)."""
    torch.manual_seed(0)
    n, count = 6, 9
    mask = torch.rand(n, count) < 0.6
    mask[0] = False  # an empty unit set
    rows = mask.reshape(-1).nonzero().squeeze(1)
    packed = torch.relu(torch.randn(rows.numel(), 5))  # zero ties, as after the unit MLP's ReLU
    weights = torch.randn(n, 5)
    grads = []
    for pool in (UnitEmbeddings.pooled, lambda u: u.dense().amax(dim=-2)):
        x = packed.clone().requires_grad_(True)
        units = UnitEmbeddings(x, rows, rows // count, n, count)
        out = pool(units)
        (out * weights).sum().backward()
        grads.append(x.grad)
        with torch.no_grad():
            assert torch.equal(out, units.dense().amax(dim=-2))
    assert torch.all(units.pooled()[0] == 0)
    positive = packed > 0
    assert torch.equal(grads[0][positive], grads[1][positive])
    assert grads[0][positive].abs().sum() > 0  # the check is not vacuous


def test_acting_without_gradient_encodes_exactly_as_training_does_and_follows_weight_changes(schema):
    """Acting looks up every categorical field of a group in one stacked table (no gradient); training keeps one
    embedding per field. Both must give the same input, also after the tables change in place (an optimizer
    step, a worker's parameter copy), which the stacked table's cache has to notice."""
    net = make_net(schema, seed=4)
    obs = make_obs(schema, (5, 3), seed=9)
    encoder = net.encoder
    groups = [g for g in schema.groups if len(g.cat_fields) > 1]
    assert groups, "the check needs a group with several categorical fields"
    for step in range(2):
        for g in schema.groups:
            if not g.cat_fields:
                continue
            training = encoder.group_input(g, obs)
            with torch.no_grad():
                acting = encoder.group_input(g, obs)
            assert torch.equal(acting, training.detach()), (step, g.name)
        with torch.no_grad():  # change every table in place, as the optimizer does
            for g in groups:
                for f in g.cat_fields:
                    encoder.embeds[g.name][f.name].weight.mul_(-2.0).add_(0.5)


def test_the_stacked_embedding_lookup_gives_each_fields_table_the_gradient_of_one_embedding_per_field(schema):
    """Training looks up a group's categorical fields in their tables stacked together (one ``index_select``,
    whose backward is fast on the CPU): the inputs and every table's gradient must equal one ``nn.Embedding``
    call per field, the layer the parameters belong to."""
    net = make_net(schema, seed=4)
    obs = make_obs(schema, (6, 3), seed=2)
    encoder = net.encoder
    for g in (g for g in schema.groups if len(g.cat_fields) > 1):
        cats = obs[f"{g.name}.cat"].long()
        tables = [encoder.embeds[g.name][f.name] for f in g.cat_fields]
        columns = g.cat_columns()
        weight = torch.randn(*cats.shape[:-1], cats.shape[-1] * net.cfg.cat_embed)
        per_field = torch.cat([tables[i](cats[..., columns[f.name]]).flatten(-2) for i, f in enumerate(g.cat_fields)], -1)
        expected = torch.autograd.grad((per_field * weight).sum(), [t.weight for t in tables])
        stacked = encoder.embedded(g, cats)[0]
        got = torch.autograd.grad((stacked * weight).sum(), [t.weight for t in tables])
        assert torch.equal(stacked, per_field), g.name
        for f, a, b in zip(g.cat_fields, expected, got, strict=True):
            assert torch.equal(a, b), (g.name, f.name)


def test_act_gives_the_log_probability_evaluate_gives_to_the_same_step(schema):
    """``act`` scores its sampled action without computing entropies; the log-probability must be evaluate's."""
    net = make_net(schema, team_size=2, seed=2)
    obs = make_obs(schema, (4,), seed=3)
    state = net.initial_state(4)
    first = torch.tensor([True, False, False, True])
    torch.manual_seed(0)
    out = net.act(obs, state, first)
    with torch.no_grad():
        ev = net.evaluate({k: v.unsqueeze(0) for k, v in obs.items()}, out.actions[None], state, first[None])
    assert torch.equal(out.logprob, ev.logprob[0])
    assert torch.equal(out.value, ev.value[0])
