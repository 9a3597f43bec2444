import math

import pytest
import torch

from fivectl.errors import BadInput
from fivectl.rl.ppo import (
    clipped_surrogate,
    explained_variance,
    normalize_advantages,
    policy_loss,
    ppo_loss,
    value_loss,
)

# (ratio, advantage, objective with clip 0.2 and dual clip c = 3, dual clip active)
CASES = [
    (1.5, 1.0, 1.2, False),  # positive A: the ratio is capped at 1 + eps
    (0.5, 1.0, 0.5, False),  # positive A, ratio below 1 - eps: unclipped (the pessimistic min)
    (0.5, -1.0, -0.8, False),  # negative A, small ratio: clipped at 1 - eps
    (1.1, -1.0, -1.1, False),  # inside the trust region
    (2.0, -1.0, -2.0, False),  # negative A, large ratio, r A = -2 > c A = -3: standard PPO
    (5.0, -1.0, -3.0, True),  # r A = -5 < c A = -3: the dual clip bounds it (HoK eq. 5)
    (4.0, -2.0, -6.0, True),  # r A = -8 < c A = -6
    (10.0, 0.5, 0.6, False),  # the dual clip never touches positive advantages
]


def test_dual_clip_objective_on_hand_picked_ratios_and_advantages():
    ratio = torch.tensor([c[0] for c in CASES])
    advantages = torch.tensor([c[1] for c in CASES])
    objective, active = clipped_surrogate(ratio, advantages, clip=0.2, dual_clip=3.0)
    assert objective.tolist() == pytest.approx([c[2] for c in CASES])
    assert active.tolist() == [c[3] for c in CASES]


def test_dual_clip_zero_is_standard_ppo_and_c_must_exceed_one():
    objective, active = clipped_surrogate(torch.tensor([5.0]), torch.tensor([-1.0]), clip=0.2, dual_clip=0.0)
    assert objective.item() == pytest.approx(-5.0) and not active.any()
    with pytest.raises(BadInput):
        policy_loss(torch.zeros(2), torch.zeros(2), torch.ones(2), clip=0.2, dual_clip=0.5)


def test_dual_clipped_samples_give_no_policy_gradient_and_stats_count_them():
    ratio = torch.tensor([c[0] for c in CASES])
    advantages = torch.tensor([c[1] for c in CASES])
    logprob = ratio.log().requires_grad_()
    loss, stats = policy_loss(logprob, torch.zeros(len(CASES)), advantages, clip=0.2, dual_clip=3.0)
    loss.backward()
    assert loss.item() == pytest.approx(-sum(c[2] for c in CASES) / len(CASES))
    grads = logprob.grad.tolist()
    assert grads[5] == 0.0 and grads[6] == 0.0  # dual clip active: constant objective
    assert grads[0] == 0.0  # ratio clipped for A > 0
    assert grads[4] != 0.0 and grads[3] != 0.0
    assert stats["dual_clip_fraction"].item() == pytest.approx(2 / len(CASES))
    expected_clip = sum(abs(c[0] - 1) > 0.2 for c in CASES) / len(CASES)
    assert stats["clip_fraction"].item() == pytest.approx(expected_clip)
    expected_kl = sum((r - 1) - math.log(r) for r, *_ in CASES) / len(CASES)
    assert stats["approx_kl"].item() == pytest.approx(expected_kl, rel=1e-5)


def test_zero_weight_samples_are_ignored():
    logprob = torch.tensor([0.1, -0.3, 2.0])
    advantages = torch.tensor([1.0, -1.0, 100.0])
    weights = torch.tensor([1.0, 1.0, 0.0])
    masked, _ = policy_loss(logprob, torch.zeros(3), advantages, 0.2, 3.0, weights)
    kept, _ = policy_loss(logprob[:2], torch.zeros(2), advantages[:2], 0.2, 3.0)
    assert masked.item() == pytest.approx(kept.item())
    normalized = normalize_advantages(advantages, weights)
    assert normalized[:2].tolist() == pytest.approx([1.0, -1.0], abs=1e-6)


def test_value_loss_plain_and_clipped():
    old = torch.tensor([0.0, 0.0])
    values = torch.tensor([1.0, 0.1])
    returns = torch.tensor([1.0, 0.0])
    assert value_loss(values, old, returns, value_clip=0.0).item() == pytest.approx(0.5 * (0 + 0.01) / 2)
    # sample 0 moved 1.0 from its old value: the clipped prediction 0.2 is 0.8 off and the max keeps it
    assert value_loss(values, old, returns, value_clip=0.2).item() == pytest.approx(0.5 * (0.64 + 0.01) / 2)


def test_total_loss_is_the_weighted_sum_of_its_parts():
    torch.manual_seed(0)
    n = 32
    kwargs = dict(
        logprob=torch.randn(n) * 0.1,
        old_logprob=torch.zeros(n),
        advantages=torch.randn(n),
        entropy=torch.rand(n),
        values=torch.randn(n),
        old_values=torch.randn(n),
        returns=torch.randn(n),
        clip=0.2,
        dual_clip=3.0,
        value_clip=0.0,
        value_loss_weight=0.5,
        entropy_coef=0.01,
        win_logit=torch.randn(n),
        win_labels=(torch.rand(n) > 0.5).float(),
        aux_losses={"rank": torch.tensor(0.7)},
        aux_loss_weight=2.0,
    )
    loss, parts = ppo_loss(**kwargs)
    expected = (
        parts["policy_loss"] + 0.5 * parts["value_loss"] - 0.01 * parts["entropy"] + 2.0 * parts["aux_loss"]
    )
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    assert parts["aux_loss"] == pytest.approx(parts["aux_win"] + 0.7, rel=1e-6)
    bce = torch.nn.functional.binary_cross_entropy_with_logits(kwargs["win_logit"], kwargs["win_labels"])
    assert parts["aux_win"] == pytest.approx(bce.item(), rel=1e-6)
    for key in ("approx_kl", "clip_fraction", "dual_clip_fraction", "explained_variance", "entropy"):
        assert key in parts


def test_explained_variance():
    returns = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert explained_variance(returns, returns) == pytest.approx(1.0)
    assert explained_variance(torch.full((4,), 2.5), returns) == pytest.approx(0.0)
    assert math.isnan(explained_variance(returns, torch.ones(4)))
