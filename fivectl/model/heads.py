"""Action distributions over masked logits, and the gradient-scaling function of the win-probability head.

Masked entries get a large negative finite logit rather than -inf: their probability is exactly 0 in float32
(exp underflows), and a row with no valid entry stays a finite uniform distribution instead of NaN
(HoK "action mask"; the degenerate case is excluded from the log-probability by the caller).
"""

from __future__ import annotations

import torch

MASKED_LOGIT = -1e9


def masked_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return logits.masked_fill(~mask, MASKED_LOGIT)


def sample(logits: torch.Tensor, deterministic: bool) -> torch.Tensor:
    """One index per row of ``logits`` [N, K]: argmax, or a draw from softmax(logits) (Gumbel-max)."""
    if deterministic:
        return logits.argmax(dim=-1)
    minus_gumbel = torch.rand_like(logits).clamp_(min=1e-20, max=1.0 - 1e-7).log_().neg_().log_()  # log(-log u)
    return (logits - minus_gumbel).argmax(dim=-1)


def log_prob_and_entropy(
    logits: torch.Tensor, index: torch.Tensor, with_entropy: bool = True
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """log softmax(logits)[index] and the entropy -sum p log p, per row (0 * masked log p is 0, not NaN); the
    entropy is None without ``with_entropy`` (acting needs only the log-probability).
    Always in float32: bfloat16 logits (learner autocast) would round the PPO ratio to 3 significant digits."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    chosen = logp.gather(-1, index.unsqueeze(-1)).squeeze(-1)
    if not with_entropy:
        return chosen, None
    entropy = -(logp.exp() * logp).sum(dim=-1)
    return chosen, entropy


class ScaleGrad(torch.autograd.Function):
    """Identity forward; the backward gradient is multiplied by ``weight``.

    Paper D: "win probability passes gradients to the main LSTM and rest of the agent with a very small weight".
    Placed between the trunk and the win head, it leaves the head's own gradient intact and scales only what
    reaches the trunk.
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: float) -> torch.Tensor:
        ctx.weight = weight
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad * ctx.weight, None


def scale_grad(x: torch.Tensor, weight: float) -> torch.Tensor:
    if not torch.is_grad_enabled():
        return x  # acting: no gradient to scale, so no autograd call on a worker's every step
    return ScaleGrad.apply(x, weight)
