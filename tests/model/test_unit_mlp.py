import pytest
import torch
from model_helpers import autograd_nodes, make_net, make_obs

from fivectl.model import kernels
from fivectl.model.kernels import runs_compiled
from fivectl.schema import load_schema


def encoder_pass(net, obs, kernels_on: bool, monkeypatch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The encoder's flat output and every parameter's gradient of a fixed random projection of it (and of the
    unit embeddings, which the target head reads), with the model's kernels on or off."""
    monkeypatch.setattr(kernels, "ENABLED", kernels_on)
    net.zero_grad(set_to_none=True)
    flat, units = net.encoder(obs)
    assert ("_FusedUnitMLPBackward" in autograd_nodes(flat)) == kernels_on
    g = torch.Generator().manual_seed(3)
    loss = (flat * torch.randn(flat.shape, generator=g, dtype=flat.dtype)).sum()
    for u in units:
        loss = loss + (u.packed * torch.randn(u.packed.shape, generator=g, dtype=flat.dtype)).sum()
    loss.backward()
    return flat.detach(), {n: p.grad.clone() for n, p in net.encoder.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("version", [1, 2])
def test_the_encoders_kernels_compute_the_reference_function_and_gradients(version, monkeypatch):
    """Every kernel of the encoder at once (fused unit MLP, max-pool, band-matrix grid) against the reference
    torch path, in float64: the output and every parameter's gradient."""
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


def test_acting_and_autocast_keep_the_torch_path():
    schema = load_schema(2)
    net = make_net(schema)
    group = next(g for g in schema.groups if g.kind == "unitset")
    floats = torch.zeros(4, group.n_float)
    table = net.encoder.stacked_embeddings(group)[0]
    params = list(net.encoder.unitsets[group.name].parameters())
    assert runs_compiled(floats, table, *params)
    with torch.no_grad():
        assert not runs_compiled(floats, table, *params)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not runs_compiled(floats, table, *params)
