"""Reward scaling by the running standard deviation of the discounted return (paper appendix C, "Reward"; the
usual PPO implementations). Its statistics are the model's running-moments module (``RunningMeanStd``), kept in
float64 and as tensors only, so a checkpoint holds them without pickling.
"""

from __future__ import annotations

import torch
from torch import nn

from fivectl.errors import BadInput
from fivectl.model.normalize import RunningMeanStd


class RewardScaler(nn.Module):
    """Divide rewards by the running standard deviation of the discounted return.

    As in the common PPO implementations (OpenAI baselines ``VecNormalize``, gym ``NormalizeReward``): each agent
    accumulates ``ret = gamma * ret + r``; the statistics of ``ret`` give the scale; the accumulator of an agent
    is reset to 0 when its game ends. Rewards are divided by the std, not centered (centering would change the
    optimal policy for episodes of varying length). ``num_agents`` is the number of reward columns the caller
    feeds every time (e.g. games_per_worker * agents_per_game for one worker). State: tensors only.
    """

    def __init__(self, num_agents: int, clip: float = 10.0, eps: float = 1e-8):
        super().__init__()
        if num_agents < 1:
            raise BadInput(f"RewardScaler num_agents must be >= 1, got {num_agents}")
        self.num_agents = num_agents
        self.clip = float(clip)
        self.eps = float(eps)
        self.return_stats = RunningMeanStd(1, eps=eps)
        self.register_buffer("returns", torch.zeros(num_agents, dtype=torch.float64))

    @property
    def std(self) -> float:
        return float(self.return_stats.std[0])

    @torch.no_grad()
    def update(self, rewards: torch.Tensor, dones: torch.Tensor, gamma: float) -> None:
        """Advance the return accumulators over ``rewards`` [T, B] or [B] (``dones`` same shape: the game ended
        after that step) and fold every intermediate return into the statistics."""
        rewards, dones = _as_time_major(rewards, dones, self.num_agents)
        returns = self.returns.clone()
        history = torch.empty_like(rewards, dtype=torch.float64)
        for t in range(rewards.shape[0]):
            returns = gamma * returns + rewards[t].to(torch.float64)
            history[t] = returns
            returns = torch.where(dones[t], torch.zeros_like(returns), returns)
        self.returns.copy_(returns)
        self.return_stats.update(history.reshape(-1, 1))

    def scale(self, rewards: torch.Tensor) -> torch.Tensor:
        """Rewards divided by the running return std, clipped to +-clip, in the rewards' dtype."""
        return (rewards / self.std).clamp(-self.clip, self.clip)

    def forward(self, rewards: torch.Tensor, dones: torch.Tensor, gamma: float) -> torch.Tensor:
        """Update with this batch, then scale it (the usual order: the first batch is scaled by itself)."""
        self.update(rewards, dones, gamma)
        return self.scale(rewards)


def _as_time_major(
    rewards: torch.Tensor, dones: torch.Tensor, num_agents: int
) -> tuple[torch.Tensor, torch.Tensor]:
    if rewards.dim() == 1:
        rewards, dones = rewards.unsqueeze(0), dones.unsqueeze(0)
    if rewards.dim() != 2 or rewards.shape[1] != num_agents or dones.shape != rewards.shape:
        raise BadInput(
            f"RewardScaler expects rewards and dones [T, {num_agents}], got {tuple(rewards.shape)} "
            f"and {tuple(dones.shape)}"
        )
    return rewards, dones.to(torch.bool)
