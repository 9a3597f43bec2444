"""Data-parallel gradient steps over ``torch.distributed`` ranks (paper §4 / Fig. 2: the optimizer's gradients are
averaged across GPUs with an all-reduce before each step; gloo on CPU, NCCL on GPUs).

Each rank holds a share of the learner batch and runs the same gradient steps on it; after ``backward`` the
gradients are summed over ranks, so every rank's optimizer takes the same step and the parameters stay equal
without being sent around. For the step to be the one a single learner would take on the union of the shares:

- each rank's loss (a weighted mean over its samples) is scaled by its share of the union's sample weight,
  ``w_r / sum_r w_r``, so the summed gradient is the gradient of the weighted mean over the union (exact for the
  policy, value and entropy terms, which are weighted by the sample weights; the auxiliary heads' losses have
  their own label weights and are combined in the same proportions, which equals the union's mean when labels
  are spread over the shares like the samples);
- advantages are normalized with the union's weighted mean and variance (two small all-reduces), as one
  learner normalizes over its whole minibatch.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


class DataParallel:
    """The collective operations a :class:`fivectl.rl.learner.PPOLearner` needs on each gradient step."""

    def __init__(self, group: dist.ProcessGroup | None = None):
        self.group = group

    def _sum(self, x: torch.Tensor) -> torch.Tensor:
        dist.all_reduce(x, op=dist.ReduceOp.SUM, group=self.group)
        return x

    def sample_share(self, weights: torch.Tensor) -> torch.Tensor:
        """This rank's fraction of the union's sample weight (the factor its loss is scaled by)."""
        local = weights.detach().sum().to(torch.float64)
        total = self._sum(local.clone())
        return (local / total.clamp_min(1e-8)).to(weights.dtype)

    def normalize_advantages(self, advantages: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """``fivectl.rl.ppo.normalize_advantages`` with the mean and variance of the union of the shares."""
        w = weights.to(advantages.dtype)
        sums = self._sum(torch.stack([(advantages * w).sum(), w.sum()]).to(torch.float64))
        mean = (sums[0] / sums[1].clamp_min(1e-8)).to(advantages.dtype)
        squared = self._sum(((advantages - mean).square() * w).sum().to(torch.float64))
        var = (squared / sums[1].clamp_min(1e-8)).to(advantages.dtype)
        return (advantages - mean) / (var.sqrt() + 1e-8)

    def sum_gradients(self, parameters: list[torch.Tensor]) -> None:
        """Sum every parameter's gradient over the ranks in one flat all-reduce (a missing gradient counts 0,
        so all ranks step the same parameters)."""
        for p in parameters:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        grads = [p.grad for p in parameters]
        flat = self._sum(torch.cat([g.reshape(-1) for g in grads]))
        offset = 0
        for g in grads:
            g.copy_(flat[offset : offset + g.numel()].view_as(g))
            offset += g.numel()

    def broadcast_buffers(self, module: torch.nn.Module, src: int = 0) -> None:
        """The module's buffers (observation normalizers) as rank ``src`` has them."""
        for buffer in module.buffers():
            dist.broadcast(buffer, src=src, group=self.group)
