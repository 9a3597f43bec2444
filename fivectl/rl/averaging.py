"""An exponential moving average of the network's weights, kept beside the trained ones (Polyak averaging).

A policy trained with PPO keeps moving: two checkpoints a minute apart can differ by 15 points of win rate against
the same opponent (benchmarks/RESULTS.md, 2026-11-30). Averaging the weights over the last stretch of training
plays the middle of that wander rather than one draw from it. The average is a by-product: it never feeds back
into training (workers and the opponent pool play the trained weights), it is saved with every checkpoint as its
``model_average`` section, and evaluation plays it when a checkpoint has one (``RUN@V:trained`` plays the other).

After each iteration that trained on ``n`` samples,

    average <- average + alpha * (weights - average),    alpha = 1 - exp(-n / min(horizon, samples so far))

so a weight trained ``s`` samples ago counts in proportion to exp(-s / horizon) (its mean age is ``horizon``
samples, as in a uniform window of twice that length); the ``min`` keeps early averages from leaning on the
random initial weights. Buffers that are not learned by gradient (the observation normalizers' statistics) are
copied, not averaged: they are running statistics already, and the averaged weights must see the observations
normalized as the trained ones do.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn


class WeightAverage:
    """The moving average of ``model``'s parameters over a horizon of ``horizon_samples`` samples."""

    def __init__(self, model: nn.Module, horizon_samples: float):
        if horizon_samples <= 0:
            raise ValueError("the averaging horizon must be positive")
        self.horizon = float(horizon_samples)
        self.learned = {name for name, _ in model.named_parameters()}
        self.weights = {k: v.detach().clone() for k, v in model.state_dict().items()}

    def update(self, model: nn.Module, samples_trained: int, samples_so_far: int) -> None:
        """Move the average towards ``model`` after it trained on ``samples_trained`` more samples (of
        ``samples_so_far`` since the run began)."""
        if samples_trained <= 0:
            return
        alpha = 1.0 - math.exp(-samples_trained / min(self.horizon, max(samples_so_far, samples_trained)))
        with torch.no_grad():
            for name, value in model.state_dict().items():
                if name in self.learned and value.is_floating_point():
                    self.weights[name].lerp_(value.detach(), alpha)
                else:
                    self.weights[name].copy_(value.detach())

    def reset(self, model: nn.Module) -> None:
        """Start the average afresh at ``model``'s weights (a checkpoint written without one)."""
        for name, value in model.state_dict().items():
            self.weights[name].copy_(value.detach())

    def arrays(self) -> dict[str, np.ndarray]:
        """The average as a checkpoint section: one array per model state key."""
        return {k: v.detach().cpu().numpy() for k, v in self.weights.items()}

    def load_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """Load a checkpoint's ``model_average`` section (the same keys as the model)."""
        for name, value in self.weights.items():
            value.copy_(torch.from_numpy(np.array(arrays[name])))
