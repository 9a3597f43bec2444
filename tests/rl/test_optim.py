import copy
import math

import pytest
import torch

from fivectl.errors import BadInput
from fivectl.rl.optim import ClippedAdam

BETA1, BETA2, EPS, LR, K = 0.9, 0.999, 1e-5, 1e-2, 5.0


def heavy_tailed_gradients(steps: int, size: int, seed: int = 0) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    normal = torch.randn(steps, size, generator=generator, dtype=torch.float64)
    # Cauchy-like outliers: a ratio of normals, plus a few explicit spikes of 1e4
    spikes = torch.randn(steps, size, generator=generator, dtype=torch.float64).abs().clamp_min(0.02)
    grads = normal / spikes
    grads[::37, 0] = 1e4
    return list(grads)


@pytest.mark.parametrize("k", [0.0, 1e12])
def test_equals_torch_adam_when_the_clip_is_off_or_never_reached(k):
    grads = heavy_tailed_gradients(60, 8)
    ours = torch.nn.Parameter(torch.linspace(-1, 1, 8, dtype=torch.float64))
    reference = torch.nn.Parameter(ours.detach().clone())
    opt = ClippedAdam([ours], lr=LR, betas=(BETA1, BETA2), eps=EPS, clip_sigmas=k)
    ref = torch.optim.Adam([reference], lr=LR, betas=(BETA1, BETA2), eps=EPS)
    for g in grads:
        ours.grad, reference.grad = g.clone(), g.clone()
        opt.step()
        ref.step()
    torch.testing.assert_close(ours.detach(), reference.detach(), rtol=1e-12, atol=1e-12)
    assert opt.last_clip_fraction == 0.0


def test_every_gradient_entering_adam_is_within_k_sqrt_v_and_every_update_is_bounded():
    grads = heavy_tailed_gradients(300, 16)
    param = torch.nn.Parameter(torch.zeros(16, dtype=torch.float64))
    opt = ClippedAdam([param], lr=LR, betas=(BETA1, BETA2), eps=EPS, clip_sigmas=K)
    previous_m = torch.zeros(16, dtype=torch.float64)
    previous_v = torch.zeros(16, dtype=torch.float64)
    max_rms = torch.zeros(16, dtype=torch.float64)
    clipped_steps = 0
    for t, g in enumerate(grads, start=1):
        before = param.detach().clone()
        param.grad = g.clone()
        opt.step()
        state = opt.state[param]
        m, v = state["exp_avg"], state["exp_avg_sq"]
        rms = (v / (1 - BETA2**t)).sqrt()  # sqrt of the bias-corrected second moment of the raw gradients
        # v is the running second moment of the UNCLIPPED gradient
        torch.testing.assert_close(v, BETA2 * previous_v + (1 - BETA2) * g.square())
        previous_v = v.clone()
        # recover the gradient that entered the first moment: m_t = beta1 m_{t-1} + (1 - beta1) g'_t
        entered = (m - BETA1 * previous_m) / (1 - BETA1)
        previous_m = m.clone()
        bound = K * rms
        assert (entered.abs() <= bound * (1 + 1e-9)).all()
        inside = g.abs() <= bound
        torch.testing.assert_close(entered[inside], g[inside])  # unclipped gradients pass unchanged
        torch.testing.assert_close(entered[~inside], g[~inside].sign() * bound[~inside])
        clipped_steps += int((~inside).any())
        assert opt.last_clip_fraction == pytest.approx(float((~inside).sum()) / 16)
        # hence the step: |m^_t| <= max_s k sqrt(v^_s), so |delta theta| <= lr k max_s sqrt(v^_s) / (sqrt(v^_t) + eps)
        max_rms = torch.max(max_rms, rms)
        step = (param.detach() - before).abs()
        assert (step <= LR * K * max_rms / (rms + EPS) * (1 + 1e-9)).all()
    assert clipped_steps > 10  # the heavy tails really were clipped: the test is not vacuous


def test_parameters_stepped_different_numbers_of_times_match_one_optimizer_each():
    """One group steps every parameter with a gradient together; a parameter without a gradient is skipped and
    keeps its own step count (its bias corrections), exactly as if it had an optimizer of its own."""
    torch.manual_seed(3)
    shapes = [(4, 3), (5,), (2, 2, 2)]
    together = [torch.nn.Parameter(torch.randn(s, dtype=torch.float64)) for s in shapes]
    alone = [torch.nn.Parameter(p.detach().clone()) for p in together]
    opt = ClippedAdam(together, lr=LR, betas=(BETA1, BETA2), eps=EPS, clip_sigmas=K)
    singles = [ClippedAdam([p], lr=LR, betas=(BETA1, BETA2), eps=EPS, clip_sigmas=K) for p in alone]
    for t in range(40):
        stepped = [i for i in range(len(shapes)) if not (i == 1 and t % 3 == 0)]
        for i, (a, b) in enumerate(zip(together, alone, strict=True)):
            g = torch.randn(shapes[i], dtype=torch.float64) * (20.0 if t % 7 == 0 else 1.0)
            a.grad = g.clone() if i in stepped else None
            b.grad = g.clone()
        opt.step()
        for i in stepped:
            singles[i].step()
    for a, b in zip(together, alone, strict=True):
        torch.testing.assert_close(a, b)
    assert opt.state[together[1]]["step"] == 40 - 14 and opt.state[together[0]]["step"] == 40


def test_an_outlier_moves_parameters_much_less_than_with_adam():
    generator = torch.Generator().manual_seed(3)
    ours = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
    reference = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
    opt = ClippedAdam([ours], lr=LR, betas=(BETA1, BETA2), eps=EPS, clip_sigmas=K)
    ref = torch.optim.Adam([reference], lr=LR, betas=(BETA1, BETA2), eps=EPS)
    warmup = 3000  # long enough that v's bias correction ~1 (1 - 0.999^3000 = 0.95)
    grads = list(torch.randn(warmup, 1, generator=generator, dtype=torch.float64))
    grads += [torch.tensor([1e6], dtype=torch.float64)] + [torch.zeros(1, dtype=torch.float64)] * 30
    moved_ours = moved_ref = 0.0
    for i, g in enumerate(grads):
        before_ours, before_ref = ours.item(), reference.item()
        ours.grad, reference.grad = g.clone(), g.clone()
        opt.step()
        ref.step()
        if i >= warmup:
            moved_ours += abs(ours.item() - before_ours)
            moved_ref += abs(reference.item() - before_ref)
    # v includes the spike S, so the clip lets k sqrt((1 - beta2) / 0.95) S ~ 0.16 S into m instead of S: the
    # displacement caused by the spike shrinks about 6-fold
    assert moved_ours < moved_ref / 5


def test_state_dict_is_tensors_and_plain_values_and_resumes_exactly():
    grads = heavy_tailed_gradients(40, 4, seed=5)
    continuous = torch.nn.Parameter(torch.ones(4, dtype=torch.float64))
    opt = ClippedAdam([continuous], lr=LR, clip_sigmas=K)
    for g in grads[:20]:
        continuous.grad = g.clone()
        opt.step()
    state = opt.state_dict()
    for entry in state["state"].values():
        assert isinstance(entry["step"], int)
        assert all(isinstance(entry[key], torch.Tensor) for key in ("exp_avg", "exp_avg_sq"))
    for group in state["param_groups"]:
        assert all(isinstance(value, int | float | tuple | list) for value in group.values())

    resumed = torch.nn.Parameter(continuous.detach().clone())
    opt2 = ClippedAdam([resumed], lr=LR, clip_sigmas=K)
    opt2.load_state_dict(copy.deepcopy(state))  # like torch.optim, state_dict() returns live tensors
    for g in grads[20:]:
        continuous.grad, resumed.grad = g.clone(), g.clone()
        opt.step()
        opt2.step()
    assert torch.equal(continuous.detach(), resumed.detach())


def test_bad_settings_are_bad_input():
    p = [torch.nn.Parameter(torch.zeros(1))]
    with pytest.raises(BadInput):
        ClippedAdam(p, clip_sigmas=-1)
    with pytest.raises(BadInput):
        ClippedAdam(p, betas=(1.0, 0.999))
    assert math.isfinite(ClippedAdam(p).defaults["lr"])


def test_a_group_stepped_as_one_flat_tensor_gives_the_same_bits_as_parameter_by_parameter(monkeypatch):
    """The flat path (every parameter with a gradient) and the per-parameter path compute the same numbers, also
    across a state_dict round trip (which replaces the state tensors the flat moments are views of)."""
    torch.manual_seed(5)
    shapes = [(4, 3), (5,), (2, 2, 2), (7, 1)]
    flat = [torch.nn.Parameter(torch.randn(s)) for s in shapes]
    each = [torch.nn.Parameter(p.detach().clone()) for p in flat]
    opt_flat = ClippedAdam(flat, lr=LR, clip_sigmas=K)
    opt_each = ClippedAdam(each, lr=LR, clip_sigmas=K)
    steps = []
    real_flat_moments = ClippedAdam._flat_moments

    def per_parameter_for(opt):
        def choose(self, index, group, params):
            result = real_flat_moments(self, index, group, params) if self is not opt else None
            steps.append(result is not None)
            return result

        return choose

    monkeypatch.setattr(ClippedAdam, "_flat_moments", per_parameter_for(opt_each))
    clipped_somewhere = False
    for t in range(30):
        if t == 15:
            opt_flat.load_state_dict(copy.deepcopy(opt_flat.state_dict()))
        for a, b in zip(flat, each, strict=True):
            g = torch.randn(a.shape) * (1e3 if t % 7 == 6 else 1.0)
            a.grad, b.grad = g.clone(), g.clone()
        opt_flat.step()
        opt_each.step()
        assert opt_flat.last_clip_fraction == opt_each.last_clip_fraction
        clipped_somewhere = clipped_somewhere or opt_flat.last_clip_fraction > 0
    assert steps.count(True) == 30 and steps.count(False) == 30  # each optimizer took its own path every step
    assert clipped_somewhere
    for a, b in zip(flat, each, strict=True):
        assert torch.equal(a, b)
        for key in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(opt_flat.state[a][key], opt_each.state[b][key])
