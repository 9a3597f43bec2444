"""Adam with per-parameter gradient clipping to +-k*sqrt(v) (paper C, optimizer: "gradients clipped per
parameter to within +-5 sqrt(v)", v being Adam's running second moment of the unclipped gradient).

Order of one step, per parameter element (t counts steps, bias corrections as in Kingma & Ba 2015):

    v_t   = beta2 * v_{t-1} + (1 - beta2) * g_t^2           second moment of the RAW gradient
    v^_t  = v_t / (1 - beta2^t)
    g'_t  = clip(g_t, -k * sqrt(v^_t), +k * sqrt(v^_t))     the clipped gradient
    m_t   = beta1 * m_{t-1} + (1 - beta1) * g'_t            first moment of the CLIPPED gradient
    theta = theta - lr * (m_t / (1 - beta1^t)) / (sqrt(v^_t) + eps)

Why v first and with g_t included: the paper's v is the second moment of the unclipped gradient, so the raw
g_t belongs in it; clipping against v_{t-1} instead would clip the very first gradient to 0 (v_0 = 0) and make
the bound depend on an arbitrary initial value. Why bias-corrected v^: it is the unbiased estimate of E[g^2],
so "k standard deviations" means the same thing at step 1 as at step 10^6 (with the raw v_t the bound would be
sqrt(1 - beta2) ~ 3% of that early on, clipping almost everything). Because v_t contains g_t, |g_t| only gets
clipped once it exceeds about k RMS of the recent gradients: a rare outlier enters m with magnitude at most
k * sqrt(v^_t), and v absorbs it as an ordinary Adam step would.

k = 0 disables the clip (plain Adam, identical to torch.optim.Adam without weight decay or amsgrad).
The state is tensors (exp_avg, exp_avg_sq) plus a plain int ``step``, so ``state_dict()`` is stored without
pickling.
"""

from __future__ import annotations

import math

import torch

from fivectl.errors import BadInput


class ClippedAdam(torch.optim.Optimizer):
    def __init__(
        self,
        params,
        lr: float = 3e-4,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-5,
        clip_sigmas: float = 5.0,
    ):
        if lr < 0:
            raise BadInput(f"learning rate must be >= 0, got {lr}")
        if not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise BadInput(f"Adam betas must be in [0, 1), got {betas}")
        if eps <= 0:
            raise BadInput(f"Adam eps must be > 0, got {eps}")
        if clip_sigmas < 0:
            raise BadInput(f"clip_sigmas must be >= 0 (0 disables), got {clip_sigmas}")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "clip_sigmas": clip_sigmas}
        super().__init__(params, defaults)
        # Fraction of gradient elements clipped by the last step(), for logging (not part of the state).
        self.last_clip_fraction = 0.0

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        clipped = 0
        total = 0
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            k = group["clip_sigmas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise BadInput("ClippedAdam does not support sparse gradients")
                grad = p.grad
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] = int(state["step"]) + 1
                step = state["step"]
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                bias_correction1 = 1 - beta1**step
                bias_correction2 = 1 - beta2**step

                # 1. second moment of the raw gradient
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                rms = exp_avg_sq.sqrt() / math.sqrt(bias_correction2)  # sqrt(v^_t)
                # 2. per-element clip to +-k sqrt(v^_t)
                if k > 0:
                    bound = rms * k
                    clipped += int((grad.abs() > bound).sum())
                    grad = torch.max(torch.min(grad, bound), -bound)
                total += grad.numel()
                # 3. first moment of the clipped gradient, then the Adam step
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                p.addcdiv_(exp_avg, rms.add_(group["eps"]), value=-group["lr"] / bias_correction1)
        self.last_clip_fraction = clipped / total if total else 0.0
        return loss
