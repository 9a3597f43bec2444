"""Labels and losses of the stop-gradient auxiliary heads of paper appendix D: net-worth rank, team objectives.

Paper D, net worth rank: "Which rank among the team (1-5) in terms of total resources collected will this hero
be at the end of the game?". Team objectives: "whether this hero will help the team destroy a given enemy
building in the near future". Fragments are short (64 steps) and most do not contain the game's end, so, as the
paper does for every auxiliary head: "If a segment contains the ground truth label, we use the ground truth label
for all time steps in that segment; if not, we use the model's prediction at the end of the segment as the label."

Net-worth rank (:func:`networth_rank_labels`), for step t of a fragment with steps 0..T-1:

    y_t = onehot(rank at the end of the game)     if the game ends at a step t' >= t of the fragment
        = p_rank(s_T)                              otherwise: the rank distribution predicted after the fragment

Rank 0 is the richest hero of its team (the paper's rank 1). Net worth is the simulator's (gold plus items held),
read at the game's last observation: the game resets as it ends, so this is the latest state a hero saw, one
decision before the end. Ties go to the lower agent index, so every label is a permutation of the ranks.

Team objective j (:func:`objective_labels`), with e_t^j = 1 when the hero helped destroy objective j during step
t (``fivectl.sim.objectives``) and a discount gamma_o from a 2-minute horizon ("we apply an additional discount
factor with horizon of 2 minutes", paper D):

    y_t = 1                        if e_t
        = 0                        elif the game ended after step t (no later event of this game)
        = gamma_o * y_{t+1}        else;   y_T = p_j(s_T), the prediction after the fragment

so y_t = gamma_o^k for the next such event k steps ahead (0 if the game ends first): "not calibrated
probabilities, but rather probabilities discounted by the expected time to the event" (paper D).

Losses: cross-entropy of the rank logits against y (a distribution over ranks), binary cross-entropy of each
objective logit against y_t^j; both averaged over the samples the learner trains on (``weights``).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from fivectl.errors import BadInput


def team_ranks(networth: torch.Tensor, team_size: int) -> torch.Tensor:
    """int64 [..., B]: each hero's rank by net worth within its team (0 = richest; ties to the lower index).

    ``networth`` [..., B] with teammates in consecutive runs of ``team_size`` along the last dim.
    """
    if networth.shape[-1] % team_size:
        raise BadInput(f"{networth.shape[-1]} agents do not split into teams of {team_size}")
    x = networth.reshape(*networth.shape[:-1], -1, team_size)
    mine, other = x.unsqueeze(-1), x.unsqueeze(-2)  # [..., teams, i, 1], [..., teams, 1, j]
    index = torch.arange(team_size, device=x.device)
    ahead_on_tie = index.unsqueeze(0) < index.unsqueeze(1)  # [i, j]: j comes before i
    ahead = (other > mine) | ((other == mine) & ahead_on_tie)
    return ahead.sum(-1).reshape(networth.shape)


def next_stop(stops: torch.Tensor) -> torch.Tensor:
    """int64 like ``stops`` [T, ...]: the first step s >= t where ``stops[s]`` is set, else T (none ahead)."""
    steps = stops.shape[0]
    index = torch.arange(steps, device=stops.device).view(steps, *(1,) * (stops.dim() - 1))
    candidates = torch.where(stops, index, steps)
    return candidates.flip(0).cummin(0).values.flip(0)


def labels_from_game_ends(
    truth: torch.Tensor, dones: torch.Tensor, last_labels: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """label_t = ``truth`` at the first game end at or after t in the fragment, else ``last_labels``.

    ``truth`` [T, B, ...] is read only where ``dones`` [T, B] is True; ``last_labels`` [B, ...]. Returns
    (labels [T, B, ...], valid [T, B]); without ``last_labels`` steps with no game end ahead are not valid.
    """
    if truth.shape[:2] != dones.shape:
        raise BadInput(f"truth {tuple(truth.shape)} and dones {tuple(dones.shape)} must share [T, B]")
    steps = dones.shape[0]
    end = next_stop(dones.to(torch.bool))
    extra = (1,) * (truth.dim() - 2)
    at_end = truth.gather(0, end.clamp(max=steps - 1).view(*end.shape, *extra).expand_as(truth)).float()
    ends_ahead = end < steps
    if last_labels is None:
        return torch.where(ends_ahead.view(*end.shape, *extra), at_end, 0.0), ends_ahead
    last = last_labels.detach().to(torch.float32).unsqueeze(0)
    return torch.where(ends_ahead.view(*end.shape, *extra), at_end, last), torch.ones_like(ends_ahead)


def networth_rank_labels(
    networth: torch.Tensor, dones: torch.Tensor, last_rank_probs: torch.Tensor | None, team_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rank distributions [T, B, team_size] (one-hot at the end of a game, else the prediction after the
    fragment) and valid [T, B]; ``networth`` [T, B] at each step's observation."""
    final_rank = F.one_hot(team_ranks(networth, team_size), team_size)
    return labels_from_game_ends(final_rank, dones, last_rank_probs)


def objective_labels(
    events: torch.Tensor, dones: torch.Tensor, last_probs: torch.Tensor | None, gamma: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Discounted "helps destroy objective j soon" labels [T, B, n] and valid [T, B, n] (module docstring).

    ``events`` bool [T, B, n]; ``last_probs`` [B, n] the predicted probabilities after the fragment. Without
    them a label is valid only where an event or a game end lies ahead in the fragment. The recursion of the
    module docstring in closed form: with s the first step >= t holding an event or a game end,
    y_t = gamma^(s-t) [event at s], or gamma^(T-t) p_T when there is none.
    """
    if events.shape[:2] != dones.shape:
        raise BadInput(f"events {tuple(events.shape)} and dones {tuple(dones.shape)} must share [T, B]")
    steps = events.shape[0]
    events = events.to(torch.bool)
    stop = next_stop(events | dones.to(torch.bool).unsqueeze(-1))
    stops_ahead = stop < steps
    index = torch.arange(steps, device=events.device).view(steps, 1, 1)
    discount = torch.pow(torch.full_like(stop, gamma, dtype=torch.float32), (stop - index).float())
    value_at_stop = events.gather(0, stop.clamp(max=steps - 1)).float()  # 1 event, 0 the game ended first
    if last_probs is None:
        return discount * torch.where(stops_ahead, value_at_stop, 0.0), stops_ahead
    last = last_probs.detach().to(torch.float32).unsqueeze(0)
    return discount * torch.where(stops_ahead, value_at_stop, last), torch.ones_like(stops_ahead)


def aux_targets(
    batch: Any, team_size: int, objective_gamma: float | None, weights: torch.Tensor
) -> dict[str, torch.Tensor]:
    """The labels and sample weights of both heads for a :class:`fivectl.rl.learner.FragmentBatch` ([T, B]
    tensors, ``weights`` the learner's per-sample weights); empty for a batch without the facts."""
    targets: dict[str, torch.Tensor] = {}
    if batch.networth is not None:
        labels, valid = networth_rank_labels(batch.networth, batch.dones, batch.last_networth_rank, team_size)
        targets["networth_rank"] = labels
        targets["networth_rank_weight"] = weights * valid.to(weights.dtype)
    if batch.objective_events is not None:
        if objective_gamma is None:
            raise BadInput("objective events need a discount (PPOLearner objective_gamma)")
        labels, valid = objective_labels(
            batch.objective_events, batch.dones, batch.last_objectives, objective_gamma
        )
        targets["objectives"] = labels
        targets["objectives_weight"] = weights.unsqueeze(-1) * valid.to(weights.dtype)
    return targets


# ---- losses ------------------------------------------------------------------------------------------------------


def _weighted_mean(x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    return (x * weights).sum() / weights.sum().clamp_min(1e-8)


def networth_rank_loss(logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Cross-entropy -sum_r y_r log softmax(logits)_r per sample [..., team_size], weighted mean."""
    cross_entropy = -(labels.detach() * torch.log_softmax(logits, dim=-1)).sum(-1)
    return _weighted_mean(cross_entropy, weights)


def objectives_loss(logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy per sample and objective [..., n] against soft labels, weighted mean."""
    bce = F.binary_cross_entropy_with_logits(logits, labels.detach(), reduction="none")
    return _weighted_mean(bce, weights)


def aux_losses(evaluation: Any, minibatch: Any) -> dict[str, torch.Tensor]:
    """``PPOLearner``'s ``aux_loss_fn``: {"networth_rank", "objectives"} losses of a minibatch of windows.

    ``evaluation.aux`` holds the heads' logits ([T, B, team_size], [T, B, n]); ``minibatch.aux_targets`` the
    labels of :func:`aux_targets` cut into the same windows. A head without labels or without a sample that
    counts in this minibatch gives no loss (and no metric for this step).
    """
    predictions, targets = evaluation.aux, minibatch.aux_targets
    losses = {}
    for name, loss_fn in (("networth_rank", networth_rank_loss), ("objectives", objectives_loss)):
        if name in predictions and name in targets:
            weights = targets[f"{name}_weight"]
            if bool(weights.sum() > 0):
                losses[name] = loss_fn(predictions[name], targets[name], weights)
    return losses
