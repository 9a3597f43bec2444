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
        # Fraction of gradient elements clipped by the last step(), for logging (not part of the state). A 0-d
        # tensor on the parameters' device: reading it as a float waits for the device, so the learner collects
        # these and reads them all once per iteration.
        self.last_clip_fraction_tensor = torch.zeros(())

    @property
    def last_clip_fraction(self) -> float:
        return float(self.last_clip_fraction_tensor)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        clipped: list[torch.Tensor] = []
        total = 0
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            n_clipped, n_total = self._step_group(group, params)
            clipped.extend(n_clipped)
            total += n_total
        device = self.param_groups[0]["params"][0].device if self.param_groups else None
        self.last_clip_fraction_tensor = (
            torch.stack(clipped).sum() / total if clipped and total else torch.zeros((), device=device)
        )
        return loss

    def _step_group(self, group: dict, params: list[torch.Tensor]) -> tuple[list[torch.Tensor], int]:
        """One step of every parameter of a group with a gradient; returns (per-parameter counts of clipped
        elements as device tensors, elements): no host synchronisation per parameter.

        The per-parameter arithmetic runs as ``torch._foreach_*`` ops over the whole group: the quickstart's
        77 small tensors made a per-parameter loop of about 900 tiny ops per step."""
        beta1, beta2 = group["betas"]
        k = group["clip_sigmas"]
        grads = [p.grad for p in params]
        if any(g.is_sparse for g in grads):
            raise BadInput("ClippedAdam does not support sparse gradients")
        states = [self._state_of(p) for p in params]
        for state in states:
            state["step"] = int(state["step"]) + 1
        exp_avgs = [state["exp_avg"] for state in states]
        exp_avg_sqs = [state["exp_avg_sq"] for state in states]
        # Steps can differ between parameters (one without a gradient is not stepped), so the bias
        # corrections are per parameter.
        bias_correction1 = [1 - beta1 ** state["step"] for state in states]
        sqrt_bias_correction2 = [math.sqrt(1 - beta2 ** state["step"]) for state in states]

        # 1. second moment of the raw gradient
        torch._foreach_mul_(exp_avg_sqs, beta2)
        torch._foreach_addcmul_(exp_avg_sqs, grads, grads, value=1 - beta2)
        rms = torch._foreach_sqrt(exp_avg_sqs)
        torch._foreach_div_(rms, sqrt_bias_correction2)  # sqrt(v^_t)
        # 2. per-element clip to +-k sqrt(v^_t)
        clipped: list[torch.Tensor] = []
        if k > 0:
            bounds = torch._foreach_mul(rms, k)
            excess = torch._foreach_sub(torch._foreach_abs(grads), bounds)  # > 0 exactly where |g| > bound
            torch._foreach_clamp_min_(excess, 0.0)
            clipped = list(torch._foreach_norm(excess, 0))  # ord 0: nonzero count
            grads = torch._foreach_minimum(grads, bounds)
            torch._foreach_neg_(bounds)
            grads = torch._foreach_maximum(grads, bounds)
        total = sum(g.numel() for g in grads)
        # 3. first moment of the clipped gradient, then the Adam step
        torch._foreach_mul_(exp_avgs, beta1)
        torch._foreach_add_(exp_avgs, grads, alpha=1 - beta1)
        torch._foreach_add_(rms, group["eps"])
        step_sizes = [-group["lr"] / bc for bc in bias_correction1]
        torch._foreach_addcdiv_(params, exp_avgs, rms, step_sizes)
        return clipped, total

    def _state_of(self, p: torch.Tensor) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = 0
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        return state
