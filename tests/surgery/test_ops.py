"""Each operation on random weights and random observations: the child computes the parent's function."""

from __future__ import annotations

import pytest
import torch
from surgery_helpers import make_net, schema_of, superset_dict, tiny_cfg, v2_dict, without_groups

from fivectl.errors import BadInput
from fivectl.model import PolicyNet
from fivectl.model.synthetic import random_obs
from fivectl.schema import load_schema
from fivectl.surgery.add_obs import plan_add_obs
from fivectl.surgery.obsmap import obs_at_constants, obs_for_schema
from fivectl.surgery.plan import apply_model
from fivectl.surgery.retire import plan_retire
from fivectl.surgery.widen import plan_widen

T, TEAMS = 6, 2


def outputs(net: PolicyNet, obs, seed: int = 0):
    """Log-probabilities of fixed actions, values and win probabilities over a [T, B] window with resets."""
    b = obs["action_mask"].shape[1]
    g = torch.Generator().manual_seed(seed)
    first = torch.rand(T, b, generator=g) < 0.2
    first[0] = True
    actions = torch.zeros(T, b, 4, dtype=torch.long)
    actions[..., 0] = 0  # noop is always available
    actions[..., 2] = 0
    actions[..., 3] = torch.randint(0, 81, (T, b), generator=g)
    with torch.no_grad():
        out = net.evaluate(obs, actions, net.initial_state(b), first)
    return out.logprob, out.value, torch.sigmoid(out.win_logit), out.aux["networth_rank"]


def child_net(plan, parent: PolicyNet) -> PolicyNet:
    child = PolicyNet(plan.schema_after, plan.model_after, plan.team_size)
    state = apply_model(plan, dict(parent.state_dict()))
    child.load_state_dict(state)
    return child.eval()


def max_delta(a, b) -> float:
    return max(float((x - y).abs().max()) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("team_size", [1, 3])
def test_add_obs_keeps_the_function_for_any_value_of_the_new_inputs(team_size):
    old, new = schema_of(v2_dict()), schema_of(superset_dict())
    cfg = tiny_cfg()
    parent = make_net(old, cfg, team_size)
    plan = plan_add_obs(old, new, cfg, team_size, new_label="v9")
    child = child_net(plan, parent)
    obs = random_obs(old, (T, 2 * team_size * TEAMS), torch.Generator().manual_seed(1))
    want = outputs(parent, obs)
    for seed in range(3):  # three different draws of the new inputs
        got = outputs(child, obs_for_schema(obs, old, new, torch.Generator().manual_seed(seed)))
        assert max_delta(want, got) <= 1e-5
    # the new columns are really read once they get a weight: zero columns, not an input that is ignored
    w = child.state_dict()["encoder.vector.self.0.weight"]
    new_cols = new.group("self").float_columns()["ability_cooldowns"]
    assert w.shape[1] > parent.state_dict()["encoder.vector.self.0.weight"].shape[1]
    assert torch.equal(w[:, new_cols], torch.zeros_like(w[:, new_cols]))


def test_add_obs_moves_columns_and_statistics_by_field_name():
    old, new = schema_of(v2_dict()), schema_of(superset_dict())
    parent = make_net(old, tiny_cfg())
    child = child_net(plan_add_obs(old, new, tiny_cfg(), 1, new_label="v9"), parent)
    ps, cs = parent.state_dict(), child.state_dict()
    old_cols, new_cols = old.group("self").float_columns(), new.group("self").float_columns()
    assert new_cols["level"].start == old_cols["level"].start + 4  # ability_cooldowns was inserted before it
    for buffer in ("mean", "var", "mask"):
        key = f"encoder.norms.self.{buffer}"
        assert torch.equal(cs[key][new_cols["level"]], ps[key][old_cols["level"]])
        assert torch.equal(cs[key][new_cols["gold"]], ps[key][old_cols["gold"]])
    key = "encoder.vector.self.0.weight"
    assert torch.equal(cs[key][:, new_cols["gold"]], ps[key][:, old_cols["gold"]])
    # the normalizer mask follows the schema for the new columns (a float field with running normalization)
    assert cs["encoder.norms.self.mask"][new_cols["ability_cooldowns"]].all()
    assert cs["encoder.norms.heroes.mask"][new.group("heroes").float_columns()["buffed"]].logical_not().all()


def test_add_obs_with_new_groups_is_exact():
    full = superset_dict()
    old = schema_of(without_groups(v2_dict(), ("items", "terrain")))
    new = schema_of(full)
    parent = make_net(old, tiny_cfg(), 1)
    plan = plan_add_obs(old, new, tiny_cfg(), 1, new_label="v9")
    child = child_net(plan, parent)
    obs = random_obs(old, (T, 4), torch.Generator().manual_seed(2))
    got = outputs(child, obs_for_schema(obs, old, new, torch.Generator().manual_seed(5)))
    assert max_delta(outputs(parent, obs), got) <= 1e-5
    assert "encoder.unitsets.items.0.weight" in child.state_dict()


def test_add_obs_refuses_what_is_not_a_superset():
    v2, cfg = schema_of(v2_dict()), tiny_cfg()
    missing = without_groups(superset_dict(), ())
    for g in missing["groups"]:
        if g["name"] == "self":
            g["fields"] = [f for f in g["fields"] if f["name"] != "buyback_cost"]
            g["fields"].append({"name": "buyback_costs"})
    with pytest.raises(BadInput, match="self.buyback_cost is missing.*did you mean self.buyback_costs"):
        plan_add_obs(v2, schema_of(missing), cfg, 1, new_label="x")
    target_group = schema_of(v2_dict())
    smaller = schema_of(without_groups(v2_dict(), ("neutrals",)))
    with pytest.raises(BadInput, match="target set"):
        plan_add_obs(smaller, target_group, cfg, 1, new_label="v2")
    with pytest.raises(BadInput, match="adds nothing"):
        plan_add_obs(v2, v2, cfg, 1, new_label="v2")
    with pytest.raises(BadInput, match="action space"):
        plan_add_obs(load_schema(2), schema_of({**superset_dict(), "action": {**v2_dict()["action"], "delays": 2}}),
                     cfg, 1, new_label="x")


@pytest.mark.parametrize(
    "sizes",
    [dict(fc=24), dict(lstm=20), dict(unit_hidden=13), dict(fc=40, lstm=17, unit_hidden=9)],
)
@pytest.mark.parametrize("team_size", [1, 2])
def test_widen_is_exact_including_the_lstm_and_the_pooled_slice(sizes, team_size):
    schema = schema_of(v2_dict())
    cfg = tiny_cfg()
    parent = make_net(schema, cfg, team_size)
    plan = plan_widen(schema, cfg, team_size, **sizes)
    child = child_net(plan, parent)
    obs = random_obs(schema, (T, 2 * team_size * TEAMS), torch.Generator().manual_seed(3))
    assert max_delta(outputs(parent, obs), outputs(child, obs)) <= 1e-5
    cs = child.state_dict()
    if "lstm" in sizes:
        h, h2 = cfg.lstm_size, sizes["lstm"]
        assert cs["lstm.weight_hh_l0"].shape == (4 * h2, h2)
        assert cs["heads.primary.weight"][:, h:].abs().sum() == 0
        # new units are computed (random incoming weights), only their outgoing weights are zero
        assert cs["lstm.weight_ih_l0"][h:h2].abs().sum() > 0


def test_checkpoints_with_one_normalizer_count_per_group_convert():
    """Checkpoints written before counts were kept per column hold a single count per group."""
    old, new = schema_of(v2_dict()), schema_of(superset_dict())
    parent = make_net(old, tiny_cfg())
    state = {k: (v[0].clone() if k.endswith(".count") else v) for k, v in parent.state_dict().items()}
    for plan in (plan_widen(old, tiny_cfg(), 1, fc=24), plan_add_obs(old, new, tiny_cfg(), 1, new_label="v9")):
        child = apply_model(plan, state)
        counts = child["encoder.norms.self.count"]
        old_columns = plan.maps.get("encoder.norms.self.count")
        kept = counts[old_columns.dest[0]] if old_columns else counts
        assert kept.tolist() == [1000.0] * old.group("self").n_float
        assert counts.sum() == kept.sum()  # new columns (not calibrated here) start at count 0


def test_widen_keeps_pooled_units_pooled():
    """An old unit of the pooled slice must still be max-pooled across teammates in the child, so the child's
    hidden FC vector restricted to the old units equals the parent's for a team of 3."""
    schema, cfg = schema_of(v2_dict()), tiny_cfg(fc_size=16)
    parent = make_net(schema, cfg, 3)
    plan = plan_widen(schema, cfg, 3, fc=32)
    child = child_net(plan, parent)
    from fivectl.surgery.widen import fc_unit_positions

    pos = fc_unit_positions(16, 32, cfg)
    assert pos[:4].tolist() == [0, 1, 2, 3] and pos[4] == 8  # pooled 4 -> 8: the unpooled units shift by 4
    x = torch.randn(6, child.encoder.out_width)
    from fivectl.model import cross_hero_pool

    p = cross_hero_pool(torch.relu(parent.fc(x)), 3, parent.pool_width)
    c = cross_hero_pool(torch.relu(child.fc(x)), 3, child.pool_width)
    assert torch.allclose(c[:, pos], p, atol=1e-6)


def test_widen_refuses_narrower_or_equal_sizes():
    schema, cfg = schema_of(v2_dict()), tiny_cfg()
    with pytest.raises(BadInput, match="narrower"):
        plan_widen(schema, cfg, 1, lstm=8)
    with pytest.raises(BadInput, match="nothing to widen"):
        plan_widen(schema, cfg, 1, fc=cfg.fc_size)


@pytest.mark.parametrize(
    "field,constant",
    [("self.buyback_cost", 350.0), ("heroes.hp", 700.0), ("self.alive", 1.0), ("creeps.unit_type", 3),
     ("terrain.lane", 1.0)],
)
def test_retire_folds_the_constant_into_the_bias(field, constant):
    schema, cfg = schema_of(v2_dict()), tiny_cfg()
    parent = make_net(schema, cfg, 1)
    plan = plan_retire(schema, cfg, 1, field, constant)
    child = child_net(plan, parent)
    obs = random_obs(schema, (T, 4), torch.Generator().manual_seed(4))
    at_constant = obs_at_constants(obs, plan.schema_after)
    want = outputs(parent, at_constant)
    if field.startswith("terrain"):
        # zero padding makes a conv's constant channel differ at the border: compare on an all-constant grid
        # is not possible, so only check the output moved less than retiring without folding would
        assert max_delta(want, outputs(child, obs)) < max_delta(want, outputs(child_net_unfolded(plan, parent), obs))
        return
    # the child ignores the field: whatever it is fed, it gives the parent's output at the constant
    assert max_delta(want, outputs(child, obs)) <= 1e-5
    assert max_delta(want, outputs(child, at_constant)) <= 1e-5
    group, name = field.split(".")
    assert plan.schema_after.group(group).fields[[f.name for f in plan.schema_after.group(group).fields].index(name)].retired


def child_net_unfolded(plan, parent):
    state = dict(parent.state_dict())
    child = PolicyNet(plan.schema_after, plan.model_after, plan.team_size)
    group = plan.args["field"].split(".")[0]
    cols = plan.schema_before.group(group).float_columns()[plan.args["field"].split(".")[1]]
    key = "encoder.grids.terrain.0.weight"
    state[key] = state[key].clone()
    state[key][:, cols] = 0
    child.load_state_dict(state)
    return child.eval()


def test_retire_refuses_unknown_or_retired_fields():
    schema, cfg = schema_of(v2_dict()), tiny_cfg()
    with pytest.raises(BadInput, match="did you mean self.buyback_cost"):
        plan_retire(schema, cfg, 1, "self.buyback_cots", 0.0)
    retired = plan_retire(schema, cfg, 1, "self.gold", 0.0).schema_after
    with pytest.raises(BadInput, match="already retired"):
        plan_retire(retired, cfg, 1, "self.gold", 0.0)
    with pytest.raises(BadInput, match="categorical"):
        plan_retire(schema, cfg, 1, "self.hero_id", 99)


def adam_state(net: PolicyNet, seed: int = 0) -> dict:
    from fivectl.rl.optim import ClippedAdam

    optimizer = ClippedAdam(net.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(seed)
    for _ in range(2):
        for p in net.parameters():
            p.grad = torch.randn(p.shape, generator=g)
        optimizer.step()
    return {"optimizer": optimizer.state_dict(), "gradient_steps": 2}


def test_adam_moments_are_moved_by_name_and_zero_for_new_entries():
    from fivectl.rl.optim import ClippedAdam
    from fivectl.surgery.plan import apply_optimizer

    old, new = schema_of(v2_dict()), schema_of(superset_dict())
    parent = make_net(old, tiny_cfg())
    learner = adam_state(parent)
    plan = plan_add_obs(old, new, tiny_cfg(), 1, new_label="v9")
    child = child_net(plan, parent)
    moved = apply_optimizer(plan, learner, list(parent.state_dict()))
    optimizer = ClippedAdam(child.parameters(), lr=1e-3)
    optimizer.load_state_dict(moved["optimizer"])  # sizes match position by position
    parent_names = [n for n, _ in parent.named_parameters()]
    child_names = [n for n, _ in child.named_parameters()]
    # the new embedding table comes before later parameters: positions shifted, names did not
    assert parent_names.index("encoder.vector.self.0.weight") != child_names.index("encoder.vector.self.0.weight")
    parent_state = {parent_names[i]: s for i, s in learner["optimizer"]["state"].items()}
    child_params = dict(child.named_parameters())
    for name, p in child.named_parameters():
        state = optimizer.state[p]
        if name == "encoder.embeds.self.item_ids.weight":
            assert not state  # a new parameter: Adam starts it at step 0
            continue
        before = parent_state[name]["exp_avg_sq"]
        if name in plan.maps:  # first layers of groups with new fields
            cols = plan.maps[name].dest[1]
            assert torch.equal(state["exp_avg_sq"][:, cols], before)
            others = torch.ones(state["exp_avg_sq"].shape[1], dtype=torch.bool)
            others[cols] = False
            assert state["exp_avg_sq"][:, others].abs().sum() == 0  # the new columns hold zeros
        else:
            assert torch.equal(state["exp_avg_sq"], before), name
        assert state["step"] == parent_state[name]["step"]
    assert len(child_params) == len(parent_names) + 1
    assert {"encoder.vector.self.0.weight", "encoder.unitsets.creeps.0.weight"} <= set(plan.maps)


def test_widen_moves_lstm_moments_to_the_gate_rows():
    from fivectl.surgery.plan import apply_optimizer

    schema, cfg = schema_of(v2_dict()), tiny_cfg()
    parent = make_net(schema, cfg)
    learner = adam_state(parent)
    plan = plan_widen(schema, cfg, 1, lstm=20)
    child_net(plan, parent)
    moved = apply_optimizer(plan, learner, list(parent.state_dict()))
    names = list(plan.child_parameters())
    position = names.index("lstm.weight_hh_l0")
    m = moved["optimizer"]["state"][position]["exp_avg"]
    parent_m = learner["optimizer"]["state"][[n for n, _ in parent.named_parameters()].index("lstm.weight_hh_l0")]
    h = cfg.lstm_size
    for k in range(4):  # each gate block keeps its rows at the front of the wider block
        assert torch.equal(m[k * 20 : k * 20 + h, :h], parent_m["exp_avg"][k * h : (k + 1) * h])
        assert m[k * 20 + h : (k + 1) * 20].abs().sum() == 0
