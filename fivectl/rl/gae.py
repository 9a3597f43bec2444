"""Generalized advantage estimation over rollout fragments (paper §4 and C: GAE with lambda 0.95, the horizon
in game seconds; Schulman et al. 2016 "High-Dimensional Continuous Control Using GAE", eq. 16).

Fragments are time-major [T, B]. ``dones[t]`` True means the game ended after step t: the step's reward is the
last one of that game and nothing is bootstrapped through it (the next row is the first step of a new game).
The end of a fragment is not the end of a game: there the value of the next observation, ``last_values``,
bootstraps the return.
"""

from __future__ import annotations

import torch

from fivectl.errors import BadInput

PAPER_STEP_SECONDS = 4 / 30  # paper: one decision every 4 frames at 30 fps, i.e. 0.133 s


def gamma_from_horizon(horizon_s: float, step_s: float = PAPER_STEP_SECONDS) -> float:
    """Discount whose horizon 1/(1-gamma) is ``horizon_s`` game seconds (paper C: gamma = 1 - 0.133 s / H)."""
    if horizon_s <= 0 or step_s <= 0:
        raise BadInput(f"horizon and step must be positive seconds, got horizon {horizon_s}, step {step_s}")
    if horizon_s < step_s:
        raise BadInput(f"horizon {horizon_s} s is shorter than one step ({step_s} s)")
    return 1.0 - step_s / horizon_s


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    dones: torch.Tensor,
    last_values: torch.Tensor,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages and lambda-returns for fragments [T, B]; ``last_values`` [B] is V(s_T) after the fragment.

    delta_t = r_t + gamma * (1 - done_t) * V(s_{t+1}) - V(s_t)
    A_t     = delta_t + gamma * lam * (1 - done_t) * A_{t+1}          (A_T = 0)
    R_t     = A_t + V(s_t)                                             (the value target)
    Vectorized over B; the loop runs over T only.
    """
    _check_fragment_shapes(rewards, values, dones, last_values)
    rewards = rewards.detach()
    values = values.detach().to(rewards.dtype)
    not_done = (~dones.to(torch.bool)).to(rewards.dtype)
    next_values = torch.cat([values[1:], last_values.detach().to(rewards.dtype).unsqueeze(0)], dim=0)
    deltas = rewards + gamma * not_done * next_values - values

    advantages = torch.empty_like(rewards)
    running = torch.zeros_like(rewards[0])
    for t in reversed(range(rewards.shape[0])):
        running = deltas[t] + gamma * lam * not_done[t] * running
        advantages[t] = running
    returns = advantages + values
    return advantages, returns


def bootstrapped_labels(
    outcomes: torch.Tensor, dones: torch.Tensor, last_predictions: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Labels for auxiliary heads that only see ground truth at game ends (paper D, win probability).

    "If a segment contains the ground truth label, we use the ground truth label for all time steps in that
    segment; if not, we use the model's prediction at the end of the segment": label_t is the outcome of the
    first game end at or after t inside the fragment, else ``last_predictions`` [B]. ``outcomes`` [T, B] is
    read only where ``dones`` is True. Returns (labels [T, B], valid [T, B]); without ``last_predictions``
    the steps with no game end ahead are not valid.
    """
    if outcomes.shape != dones.shape or outcomes.dim() != 2:
        raise BadInput(
            f"outcomes and dones must both be [T, B], got {tuple(outcomes.shape)}, {tuple(dones.shape)}"
        )
    dones = dones.to(torch.bool)
    labels = torch.empty_like(outcomes, dtype=torch.float32)
    valid = torch.empty_like(dones)
    if last_predictions is None:
        label = torch.zeros(outcomes.shape[1], dtype=torch.float32, device=outcomes.device)
        known = torch.zeros(outcomes.shape[1], dtype=torch.bool, device=outcomes.device)
    else:
        label = last_predictions.detach().to(torch.float32)
        known = torch.ones(outcomes.shape[1], dtype=torch.bool, device=outcomes.device)
    for t in reversed(range(outcomes.shape[0])):
        label = torch.where(dones[t], outcomes[t].to(torch.float32), label)
        known = known | dones[t]
        labels[t] = label
        valid[t] = known
    return labels, valid


def _check_fragment_shapes(
    rewards: torch.Tensor, values: torch.Tensor, dones: torch.Tensor, last_values: torch.Tensor
) -> None:
    if rewards.dim() != 2:
        raise BadInput(f"rewards must be [T, B], got shape {tuple(rewards.shape)}")
    if values.shape != rewards.shape or dones.shape != rewards.shape:
        raise BadInput(
            f"rewards {tuple(rewards.shape)}, values {tuple(values.shape)} and dones {tuple(dones.shape)} "
            "must have the same [T, B] shape"
        )
    if last_values.shape != rewards.shape[1:]:
        raise BadInput(f"last_values must be [B] = [{rewards.shape[1]}], got {tuple(last_values.shape)}")
