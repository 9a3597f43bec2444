"""Action heads: masks give zero probability, unused parameters get no gradient, act agrees with evaluate."""

from __future__ import annotations

import torch
from model_helpers import make_net, make_obs, sample_window

from fivectl.model.policy import DELAY, OFFSET, PRIMARY, TARGET


def window(schema, t=6, b=8, seed=0):
    obs = make_obs(schema, (t, b), seed)
    first = torch.zeros(t, b, dtype=torch.bool)
    first[0] = True
    return obs, first


def evaluate(net, obs, actions, first):
    return net.evaluate(obs, actions, net.initial_state(first.shape[1]), first)


def first_unit_action(schema) -> int:
    return schema.action.target_type.index("unit")


def test_unavailable_primary_actions_have_zero_probability(schema):
    net = make_net(schema)
    obs, first = window(schema)
    actions, _ = sample_window(net, obs, first)
    masked = ~obs["action_mask"]
    assert masked.any()
    choice = masked.float().argmax(dim=-1)  # a masked action where the row has one
    has_masked = masked.any(dim=-1)
    actions[..., PRIMARY] = choice
    prob = evaluate(net, obs, actions, first).logprob.exp()
    assert torch.all(prob[has_masked] == 0)


def test_sampling_never_picks_a_masked_action_or_target(schema):
    net = make_net(schema)
    obs = make_obs(schema, (512,), seed=1)
    out = net.act(obs, net.initial_state(512), torch.ones(512, dtype=torch.bool))
    rows = torch.arange(512)
    primary = out.actions[:, PRIMARY]
    assert obs["action_mask"][rows, primary].all()
    allowed = obs["target_mask"][rows, primary]
    uses_target = obs["param_mask"][rows, primary, 0] & allowed.any(-1)
    assert uses_target.sum() > 20
    assert allowed[rows, out.actions[:, TARGET]][uses_target].all()


def test_disallowed_targets_have_zero_probability(schema):
    net = make_net(schema)
    obs, first = window(schema)
    unit = first_unit_action(schema)
    obs["action_mask"][:] = False
    obs["action_mask"][..., unit] = True
    actions, _ = sample_window(net, obs, first)
    allowed = obs["target_mask"][..., unit, :]
    disallowed = ~allowed
    rows_ok = allowed.any(-1) & disallowed.any(-1)
    assert rows_ok.any()
    actions[..., TARGET] = disallowed.float().argmax(dim=-1)
    prob = evaluate(net, obs, actions, first).logprob.exp()
    assert torch.all(prob[rows_ok] == 0)


def test_unit_action_without_any_valid_target_is_finite(schema):
    net = make_net(schema)
    obs, first = window(schema)
    obs["target_mask"][:] = False
    obs["action_mask"][..., first_unit_action(schema)] = True
    obs["action_mask"][..., 0] = False
    actions, _ = sample_window(net, obs, first)
    ev = evaluate(net, obs, actions, first)
    (-(ev.logprob + ev.entropy).sum()).backward()
    assert torch.isfinite(ev.logprob).all() and torch.isfinite(ev.entropy).all()
    assert all(torch.isfinite(p.grad).all() for p in net.parameters() if p.grad is not None)
    # No valid target: the target head is not part of the decision, so it gets no gradient.
    assert net.heads["target_query"].weight.grad.abs().max() == 0


def policy_grads(net, obs, first, actions):
    net.zero_grad()
    ev = evaluate(net, obs, actions, first)
    (-(ev.logprob + 0.01 * ev.entropy).sum()).backward()
    return {name: head.weight.grad.abs().max().item() for name, head in net.heads.items() if name != "value"}


def test_parameters_the_primary_does_not_use_get_zero_gradient(schema):
    net = make_net(schema)
    obs, first = window(schema)
    actions, _ = sample_window(net, obs, first)
    used = policy_grads(net, obs, first, actions)
    assert used["target_query"] > 0 and used["target_key"] > 0 and used["offset"] > 0

    obs["param_mask"][:] = False
    unused = policy_grads(net, obs, first, actions)
    assert unused["target_query"] == 0 and unused["target_key"] == 0 and unused["offset"] == 0
    assert unused["primary"] > 0 and unused["delay"] > 0


def test_unused_parameters_do_not_change_the_log_probability(schema):
    net = make_net(schema)
    obs, first = window(schema)
    obs["param_mask"][:] = False
    actions, _ = sample_window(net, obs, first)
    base = evaluate(net, obs, actions, first)
    actions[..., TARGET] = (actions[..., TARGET] + 1) % schema.n_targets
    actions[..., OFFSET] = (actions[..., OFFSET] + 7) % schema.action.n_offset
    other = evaluate(net, obs, actions, first)
    torch.testing.assert_close(other.logprob, base.logprob)
    torch.testing.assert_close(other.entropy, base.entropy)


def test_act_and_evaluate_agree_over_a_window_with_resets(schema):
    net = make_net(schema, team_size=2)
    obs, first = window(schema, t=8, b=6)
    first[3, 1] = first[5, 4] = True
    actions, logprob = sample_window(net, obs, first)
    ev = evaluate(net, obs, actions, first)
    torch.testing.assert_close(ev.logprob, logprob, atol=1e-5, rtol=1e-5)


def test_deterministic_act_is_repeatable_and_valid(schema):
    net = make_net(schema)
    obs = make_obs(schema, (32,), seed=2)
    state, first = net.initial_state(32), torch.ones(32, dtype=torch.bool)
    greedy = net.act(obs, state, first, deterministic=True)
    assert greedy.actions.dtype == torch.int64 and greedy.actions.shape == (32, 4)
    assert torch.equal(net.act(obs, state, first, deterministic=True).actions, greedy.actions)
    assert obs["action_mask"][torch.arange(32), greedy.actions[:, PRIMARY]].all()


def test_offset_xy_is_the_product_of_an_x_and_a_y_choice(schema):
    net = make_net(schema, offset_xy=True)
    assert "offset" not in net.heads and net.heads["offset_x"].out_features == 9
    h = torch.randn(5, net.cfg.lstm_size)
    logp = torch.log_softmax(net._offset_logits(h), dim=-1).view(5, 9, 9)  # [N, y, x]
    logp_x = torch.log_softmax(net.heads["offset_x"](h), dim=-1)
    logp_y = torch.log_softmax(net.heads["offset_y"](h), dim=-1)
    torch.testing.assert_close(logp, logp_y[:, :, None] + logp_x[:, None, :])
    # The game reads cell = y * 9 + x: a greedy offset is the greedy x and the greedy y.
    greedy = net._offset_logits(h).argmax(-1)
    assert torch.equal(greedy % 9, logp_x.argmax(-1)) and torch.equal(greedy // 9, logp_y.argmax(-1))

    obs, first = window(schema, t=8, b=6)
    first[4, 2] = True
    actions, logprob = sample_window(net, obs, first)
    torch.testing.assert_close(evaluate(net, obs, actions, first).logprob, logprob, atol=1e-5, rtol=1e-5)


def test_without_learn_delay_every_action_is_immediate_and_delay_is_no_choice(schema):
    net = make_net(schema, learn_delay=False)
    assert "delay" not in net.heads
    obs, first = window(schema)
    actions, logprob = sample_window(net, obs, first)
    assert (actions[..., DELAY] == 0).all()
    ev = evaluate(net, obs, actions, first)
    torch.testing.assert_close(ev.logprob, logprob, atol=1e-5, rtol=1e-5)
    assert (ev.head_entropy["delay"] == 0).all()
    ev.logprob.sum().backward()
    assert all(p.grad is not None for p in net.heads["primary"].parameters())


def test_bfloat16_autocast_evaluate_returns_float32_close_to_float32(schema):
    """The learner's ``precision = "bfloat16"``: the layers run in bfloat16, but everything a loss reads is
    float32 and close to the float32 pass, and the gradient reaches every parameter the float32 pass reaches."""
    net = make_net(schema, team_size=2, lstm_size=32, fc_size=32)
    obs, first = window(schema, t=8, b=6)
    first[3, 1] = True
    actions, _ = sample_window(net, obs, first)
    exact = evaluate(net, obs, actions, first)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        seen = []
        hook = net.fc.register_forward_hook(lambda m, i, out: seen.append(out.dtype))
        fast = evaluate(net, obs, actions, first)
        hook.remove()
    assert seen == [torch.bfloat16]  # autocast is really on inside the model
    for name in ("logprob", "entropy", "value", "win_logit"):
        assert getattr(fast, name).dtype == torch.float32, name
    assert all(v.dtype == torch.float32 for v in fast.aux.values())
    # bfloat16 keeps about 3 significant digits: log-probabilities move by a few hundredths at most
    assert (fast.logprob - exact.logprob).abs().max() < 0.1
    assert (fast.logprob - exact.logprob).abs().mean() < 0.02
    torch.testing.assert_close(fast.value, exact.value, atol=0.05, rtol=0.05)
    (fast.logprob.sum() + fast.value.sum()).backward()
    grads = {n: p.grad for n, p in net.named_parameters() if p.grad is not None}
    assert grads and all(g.dtype == torch.float32 and torch.isfinite(g).all() for g in grads.values())
    assert any(n.startswith("encoder.unitsets") for n in grads) and "lstm.weight_hh_l0" in grads


def test_target_scores_are_the_attention_over_every_unit_slot(schema):
    """The target logits score only the observed units (``UnitEmbeddings.packed``); they must equal HoK eq. 1
    over every slot, keys projected from the dense embeddings (zeros on empty slots), to the bit."""
    import math

    net = make_net(schema, seed=2)
    obs = make_obs(schema, (24,), seed=4)
    with torch.no_grad():
        flat, units = net.encoder(obs)
        assert any(0 < u.packed.shape[0] < u.n * u.count for u in units), "needs empty slots"
        h = torch.randn(24, net.cfg.lstm_size)
        allowed = torch.ones(24, schema.n_targets, dtype=torch.bool)
        got = net._target_logits(h, units, allowed)
        query = net.heads["target_query"](h)
        key = net.heads["target_key"]
        q_units = (query @ key.weight).unsqueeze(-2)
        dense = torch.cat([(u.dense() * q_units).sum(-1) for u in units], dim=-1)
        want = (dense + (query @ key.bias).unsqueeze(-1)) / math.sqrt(query.shape[-1])
    assert torch.equal(got, want)
