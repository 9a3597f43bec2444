"""Running mean and standard deviation: the observation normalizer of the model (paper appendix C,
"Observations"); the learner's reward scale reuses it for the statistics of the return.

The statistics are float64 so that billions of samples do not lose precision, and they are tensors only, so a
checkpoint holds them without pickling.
"""

from __future__ import annotations

import torch
from torch import nn

from fivectl.errors import BadInput
from fivectl.model.kernels import numba_can_run
from fivectl.model.kernels.moments import column_moments


def merge_moments(
    mean: torch.Tensor,
    var: torch.Tensor,
    count: torch.Tensor,
    batch_mean: torch.Tensor,
    batch_var: torch.Tensor,
    batch_count: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Merge two (mean, population variance, count) summaries (Chan, Golub & LeVeque 1979, parallel form).

    delta = mb - m;  n' = n + nb;  m' = m + delta * nb / n';  M2' = n v + nb vb + delta^2 n nb / n';  v' = M2'/n'
    """
    total = count + batch_count
    delta = batch_mean - mean
    new_mean = mean + delta * (batch_count / total)
    m2 = var * count + batch_var * batch_count + delta.square() * (count * batch_count / total)
    return new_mean, m2 / total, total


def batch_moments(rows: torch.Tensor, keep: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(mean, population variance, count) in float64 of ``rows`` [R, F], only the rows where ``keep`` [R] is set.

    On the CPU the same statistics come from one compiled two-pass loop over the rows (``kernels/moments.py``)."""
    if numba_can_run(rows):
        return column_moments(rows, keep)
    if keep is not None:
        rows = rows[keep]
    rows = rows.to(torch.float64)
    var, mean = torch.var_mean(rows, dim=0, correction=0)
    return mean, var, rows.shape[0]


def standardize(x: torch.Tensor, standardizer: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """``clamp((x - shift) * scale, low, high)`` with a normalizer's ``standardizer`` (shift, scale, low, high)."""
    shift, scale, low, high = standardizer
    return ((x - shift) * scale).clamp(low, high)


class RunningMeanStd(nn.Module):
    """Running mean/variance of a feature vector and the clipped standardization it defines.

    Paper C: observations are normalized by a running mean and standard deviation and clipped to +-5. ``mask``
    selects the columns to normalize (float features); the others (categorical ids, flags) pass through.
    Buffers ``mean``, ``var``, ``count`` (float64) travel with the model's ``state_dict``. The count is kept per
    column: every update adds the same number to each, but a column added by ``fivectl surgery add-obs`` starts
    with its own (small) count, so training data is not diluted by the samples its group saw before it existed.
    A checkpoint with one count for all columns (written before) loads as that count for each.
    """

    def __init__(self, size: int, mask: torch.Tensor | None = None, clip: float = 5.0, eps: float = 1e-8):
        super().__init__()
        if size < 1:
            raise BadInput(f"RunningMeanStd size must be >= 1, got {size}")
        if mask is None:
            mask = torch.ones(size, dtype=torch.bool)
        mask = torch.as_tensor(mask, dtype=torch.bool)
        if mask.shape != (size,):
            raise BadInput(f"RunningMeanStd mask has shape {tuple(mask.shape)}, expected ({size},)")
        self.size = size
        self.clip = float(clip)
        self.eps = float(eps)
        self.register_buffer("mask", mask.clone())
        self.register_buffer("mean", torch.zeros(size, dtype=torch.float64))
        self.register_buffer("var", torch.ones(size, dtype=torch.float64))
        # count starts at 0: the first update replaces the prior (mean 0, var 1) entirely.
        self.register_buffer("count", torch.zeros(size, dtype=torch.float64))
        self._standardizer_cache: tuple[tuple, tuple[torch.Tensor, ...]] | None = None
        # (shift, scale, low, high) handed in by a traced graph's inputs while it is recorded (``pinned``)
        self.pinned: tuple[torch.Tensor, ...] | None = None

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        count = state_dict.get(prefix + "count")
        if count is not None and count.dim() == 0:  # one count per group (older checkpoints): one per column
            state_dict[prefix + "count"] = count.expand(self.size).clone()
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def _apply(self, fn, recurse=True):
        # model.float() / .half() would truncate the float64 statistics; only device moves apply to them.
        def keep_float64(t: torch.Tensor) -> torch.Tensor:
            out = fn(t)
            if t.dtype == torch.float64 and out.dtype != torch.float64:
                return t.to(device=out.device)
            return out

        self._standardizer_cache = None
        return super()._apply(keep_float64, recurse)

    @torch.no_grad()
    def update(self, x: torch.Tensor, keep: torch.Tensor | None = None) -> None:
        """Fold the rows of ``x`` [..., size] into the statistics (all leading dims are samples), only those where
        ``keep`` [...] is set when it is given."""
        if x.shape[-1] != self.size:
            raise BadInput(f"RunningMeanStd expects last dim {self.size}, got shape {tuple(x.shape)}")
        rows = x.detach().reshape(-1, self.size)
        if keep is not None:
            keep = keep.detach().reshape(-1).to(device=rows.device, dtype=torch.bool)
        batch_mean, batch_var, n = batch_moments(rows, keep)
        if n == 0:
            return
        batch_mean, batch_var = batch_mean.to(self.mean.device), batch_var.to(self.mean.device)
        mean, var, count = merge_moments(self.mean, self.var, self.count, batch_mean, batch_var, float(n))
        self.mean.copy_(mean)
        self.var.copy_(var)
        self.count.copy_(count)

    @property
    def std(self) -> torch.Tensor:
        return torch.sqrt(self.var + self.eps)

    def standardizer(self, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(shift, scale, low, high) in ``dtype`` such that ``((x - shift) * scale).clamp(low, high)`` is the
        normalized input: mean, 1 / std and +-clip on the normalized columns; 0, 1 and +-inf on the others, which
        that leaves exactly unchanged. Recomputed only when the statistics change.

        A rollout worker normalizes every step with statistics that change once per published version, so
        converting the float64 buffers on every call would be a noticeable part of its time. The tensors' version counters change
        on every in-place write (``update``, ``load_state_dict``, a worker's parameter copy), which keys the cache.
        While ``torch.jit.trace`` records a graph (``fivectl.model.traced``) they are that graph's inputs
        (``pinned``): the graph stays a few operations long, and its caller hands it the cached tensors.
        """
        if self.pinned is not None:
            return self.pinned
        stats = (self.mean, self.var, self.mask)
        key = (*(t._version for t in stats), *(t.data_ptr() for t in stats), dtype)
        cache = self._standardizer_cache
        if cache is None or cache[0] != key:
            mask = self.mask
            shift = torch.where(mask, self.mean, 0.0).to(dtype)
            scale = torch.where(mask, torch.rsqrt(self.var + self.eps), 1.0).to(dtype)
            bound = torch.where(mask, self.clip, float("inf")).to(dtype)
            cache = (key, (shift, scale, -bound, bound))
            self._standardizer_cache = cache
        return cache[1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(x - mean) / sqrt(var + eps) clipped to +-clip on masked columns; other columns unchanged.

        Three operations with per-column constants instead of normalizing every column and then selecting: a
        rollout worker's step is a few hundred small operations, so each one counts.
        """
        return standardize(x, self.standardizer(x.dtype))
