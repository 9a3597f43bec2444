import pytest
import torch
from model_helpers import make_net, make_obs

import fivectl.model.encoder as encoder_module
from fivectl.model.unit_mlp import fused_unit_mlp_applies


def encoder_pass(net, obs, fused: bool, monkeypatch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The encoder's flat output and every parameter's gradient of a fixed random projection of it (and of the
    unit embeddings, which the target head reads), with the fused unit MLP on or off."""
    monkeypatch.setattr(
        encoder_module, "fused_unit_mlp_applies", fused_unit_mlp_applies if fused else (lambda *a: False)
    )
    net.zero_grad(set_to_none=True)
    flat, units = net.encoder(obs)
    g = torch.Generator().manual_seed(3)
    loss = (flat * torch.randn(flat.shape, generator=g, dtype=flat.dtype)).sum()
    for u in units:
        loss = loss + (u.packed * torch.randn(u.packed.shape, generator=g, dtype=flat.dtype)).sum()
    loss.backward()
    return flat.detach(), {n: p.grad.clone() for n, p in net.encoder.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("version", [1, 2])
def test_the_fused_unit_mlp_computes_the_modules_function_and_gradients(version, monkeypatch):
    from fivectl.schema import load_schema

    schema = load_schema(version)
    net = make_net(schema).double()
    obs = {k: (v.double() if v.is_floating_point() else v) for k, v in make_obs(schema, (37,)).items()}
    # statistics of narrower data, so that many columns are clipped at +-5 on both sides
    narrow = {k: (v - 0.5) * 0.05 + 0.5 if v.is_floating_point() else v for k, v in obs.items()}
    net.update_normalizers(narrow)
    fused, fused_grads = encoder_pass(net, obs, True, monkeypatch)
    plain, plain_grads = encoder_pass(net, obs, False, monkeypatch)
    torch.testing.assert_close(fused, plain, rtol=1e-12, atol=1e-12)
    assert fused_grads.keys() == plain_grads.keys()
    tables = [n for n in plain_grads if n.startswith(("embeds.heroes.", "embeds.creeps."))]
    assert tables and any(plain_grads[n].abs().sum() > 0 for n in tables)  # embeddings of unit sets learn
    for name in plain_grads:
        torch.testing.assert_close(fused_grads[name], plain_grads[name], rtol=1e-10, atol=1e-12, msg=name)


def test_acting_keeps_the_modules(monkeypatch):
    from fivectl.schema import load_schema

    schema = load_schema(2)
    net = make_net(schema)
    group = next(g for g in schema.groups if g.kind == "unitset")
    floats = torch.zeros(4, group.n_float)
    table = net.encoder.stacked_embeddings(group)[0]
    assert fused_unit_mlp_applies(net.encoder.unitsets[group.name], floats, table)
    with torch.no_grad():
        assert not fused_unit_mlp_applies(net.encoder.unitsets[group.name], floats, table)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not fused_unit_mlp_applies(net.encoder.unitsets[group.name], floats, table)
