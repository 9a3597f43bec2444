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

Speed: when every parameter of a group has a gradient and the same step count (always, in training), the
group's moments live in two flat tensors (each parameter's ``exp_avg`` / ``exp_avg_sq`` a view into them) and
a step is a dozen operations on 300k elements instead of a dozen per parameter: on CPU each ``torch._foreach_*``
op still dispatches once per tensor, and the quickstart has 77 tensors.
The arithmetic is the same per element, so both ways give the same bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from fivectl.errors import BadInput


@dataclass
class FlatMoments:
    """A group's moments as two flat tensors (``views[i]``: parameter i's exp_avg and exp_avg_sq in them), and
    the step's scratch tensors of the same size, kept so that a step allocates nothing."""

    exp_avg: torch.Tensor
    exp_avg_sq: torch.Tensor
    views: list[tuple[torch.Tensor, torch.Tensor]]
    grad: torch.Tensor
    rms: torch.Tensor
    bound: torch.Tensor
    over: torch.Tensor  # bool: where |g| exceeds the bound
    update: torch.Tensor
    update_views: list[torch.Tensor]

    @classmethod
    def of(cls, params: list[torch.Tensor], states: list[dict]) -> FlatMoments:
        """Moves each parameter's state into the flat tensors (its state entries become views of them)."""
        sizes = [p.numel() for p in params]
        exp_avg = torch.cat([s["exp_avg"].reshape(-1) for s in states])
        exp_avg_sq = torch.cat([s["exp_avg_sq"].reshape(-1) for s in states])
        views = []
        for p, state, m, v in zip(params, states, exp_avg.split(sizes), exp_avg_sq.split(sizes), strict=True):
            state["exp_avg"], state["exp_avg_sq"] = m.view_as(p), v.view_as(p)
            views.append((state["exp_avg"], state["exp_avg_sq"]))
        update = torch.zeros_like(exp_avg)
        return cls(
            exp_avg,
            exp_avg_sq,
            views,
            grad=torch.zeros_like(exp_avg),
            rms=torch.zeros_like(exp_avg),
            bound=torch.zeros_like(exp_avg),
            over=torch.zeros_like(exp_avg, dtype=torch.bool),
            update=update,
            update_views=[u.view_as(p) for u, p in zip(update.split(sizes), params, strict=True)],
        )

    def is_state_of(self, states: list[dict]) -> bool:
        """Still the moments of these states (``load_state_dict`` replaces the tensors)?"""
        return len(self.views) == len(states) and all(
            s["exp_avg"] is m and s["exp_avg_sq"] is v for s, (m, v) in zip(states, self.views, strict=True)
        )


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
        # per group index; rebuilt when its state tensors are replaced
        self._flat: dict[int, FlatMoments] = {}

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
        for index, group in enumerate(self.param_groups):
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            flat = self._flat_moments(index, group, params)
            if flat is not None:
                n_clipped, n_total = self._step_flat(group, params, flat)
            else:
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

    def _flat_moments(self, index: int, group: dict, params: list[torch.Tensor]) -> FlatMoments | None:
        """The group's moments as flat tensors when it can be stepped as one (every parameter has a gradient,
        one dtype and device, one step count); else None. Built on the first such step and again whenever the
        state tensors were replaced (``load_state_dict``): the per-parameter state stays the source of truth."""
        if len(params) != len(group["params"]) or len(params) < 2:
            return None
        states = [self._state_of(p) for p in params]
        if len({(p.dtype, p.device) for p in params}) > 1 or len({int(s["step"]) for s in states}) > 1:
            return None
        flat = self._flat.get(index)
        if flat is None or not flat.is_state_of(states):
            flat = self._flat[index] = FlatMoments.of(params, states)
        return flat

    def _step_flat(
        self, group: dict, params: list[torch.Tensor], flat: FlatMoments
    ) -> tuple[list[torch.Tensor], int]:
        """:meth:`_step_group` on the flat moments: the same operations, in the same order, once per group."""
        beta1, beta2 = group["betas"]
        k = group["clip_sigmas"]
        grads = [p.grad for p in params]
        if any(g.is_sparse for g in grads):
            raise BadInput("ClippedAdam does not support sparse gradients")
        step = int(self.state[params[0]]["step"]) + 1
        for p in params:
            self.state[p]["step"] = step
        grad, rms, bound = flat.grad, flat.rms, flat.bound
        torch.cat([g.reshape(-1) for g in grads], out=grad)

        # 1. second moment of the raw gradient
        flat.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        torch.sqrt(flat.exp_avg_sq, out=rms).div_(math.sqrt(1 - beta2**step))  # sqrt(v^_t)
        # 2. per-element clip to +-k sqrt(v^_t)
        clipped: list[torch.Tensor] = []
        if k > 0:
            torch.mul(rms, k, out=bound)
            torch.gt(torch.abs(grad, out=flat.update), bound, out=flat.over)
            clipped = [torch.count_nonzero(flat.over).to(rms.dtype)]
            torch.minimum(grad, bound, out=grad)
            torch.maximum(grad, bound.neg_(), out=grad)
        # 3. first moment of the clipped gradient, then the Adam step
        flat.exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
        rms.add_(group["eps"])
        flat.update.zero_().addcdiv_(flat.exp_avg, rms, value=-group["lr"] / (1 - beta1**step))
        torch._foreach_add_(params, flat.update_views)
        return clipped, grad.numel()

    def _state_of(self, p: torch.Tensor) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = 0
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        return state
