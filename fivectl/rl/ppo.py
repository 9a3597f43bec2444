"""The PPO loss: clipped surrogate with dual clip, value loss, entropy bonus and auxiliary losses.

Paper §4 / C: PPO (Schulman et al. 2017) with an entropy bonus c * S[pi]; HoK 1v1 (Ye et al. 2020) §"Dual-clip
PPO", eq. (4)-(5): for negative advantages the objective is also bounded below by c * A, so a sample whose ratio
r = pi/pi_old has exploded (stale, off-policy data) cannot produce an unbounded gradient.

Every mean is weighted by ``weights`` [T, B] (1 for real samples, 0 for padding), so padded or masked samples
contribute nothing. All functions take tensors of the same shape (typically [T, B]).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from fivectl.errors import BadInput


def weighted_mean(x: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    if weights is None:
        return x.mean()
    weights = weights.to(x.dtype)
    return (x * weights).sum() / weights.sum().clamp_min(1e-8)


def normalize_advantages(advantages: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
    """(A - mean) / (std + 1e-8) over the samples that count (done per minibatch, as in the PPO baselines)."""
    mean = weighted_mean(advantages, weights)
    var = weighted_mean((advantages - mean).square(), weights)
    return (advantages - mean) / (var.sqrt() + 1e-8)


# ---- policy: clipped surrogate with dual clip (HoK eq. 4-5) ---------------------------------------------------


def clipped_surrogate(
    ratio: torch.Tensor, advantages: torch.Tensor, clip: float, dual_clip: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sample PPO objective (to maximize) and where the dual clip is active.

    L^CLIP = min(r A, clip(r, 1-eps, 1+eps) A)                       HoK eq. (4)
    A < 0:  max(L^CLIP, c A)                                         HoK eq. (5), c > 1 (paper: 3); c = 0 disables
    """
    unclipped = ratio * advantages
    clipped = ratio.clamp(1.0 - clip, 1.0 + clip) * advantages
    objective = torch.min(unclipped, clipped)
    if dual_clip == 0:
        return objective, torch.zeros_like(objective, dtype=torch.bool)
    floor = dual_clip * advantages
    dual_active = (advantages < 0) & (objective < floor)
    return torch.where(dual_active, floor, objective), dual_active


def policy_loss(
    logprob: torch.Tensor,
    old_logprob: torch.Tensor,
    advantages: torch.Tensor,
    clip: float,
    dual_clip: float,
    weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """-E[dual-clipped surrogate] and its diagnostics (approx_kl, clip_fraction, dual_clip_fraction)."""
    if dual_clip != 0 and dual_clip <= 1:
        raise BadInput(f"dual_clip must be > 1 (HoK uses 3) or 0 to disable, got {dual_clip}")
    log_ratio = logprob - old_logprob.detach()
    ratio = log_ratio.exp()
    objective, dual_active = clipped_surrogate(ratio, advantages.detach(), clip, dual_clip)
    with torch.no_grad():
        # k3 estimator of KL(old || new): unbiased and always >= 0 (Schulman, "Approximating KL divergence")
        approx_kl = weighted_mean((ratio - 1) - log_ratio, weights)
        clip_fraction = weighted_mean(((ratio - 1).abs() > clip).to(ratio.dtype), weights)
        dual_clip_fraction = weighted_mean(dual_active.to(ratio.dtype), weights)
    stats = {"approx_kl": approx_kl, "clip_fraction": clip_fraction, "dual_clip_fraction": dual_clip_fraction}
    return -weighted_mean(objective, weights), stats


# ---- value: squared error to the GAE returns, optionally clipped around the old values ------------------------


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    value_clip: float,
    weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """0.5 * (V - R)^2; with value_clip > 0 the pessimistic max with the clipped prediction
    V_old + clip(V - V_old, -value_clip, value_clip) (the PPO baselines' value clipping)."""
    returns = returns.detach()
    squared_error = (values - returns).square()
    if value_clip > 0:
        old_values = old_values.detach()
        clipped_values = old_values + (values - old_values).clamp(-value_clip, value_clip)
        squared_error = torch.max(squared_error, (clipped_values - returns).square())
    return 0.5 * weighted_mean(squared_error, weights)


def explained_variance(
    values: torch.Tensor, returns: torch.Tensor, weights: torch.Tensor | None = None
) -> float:
    """1 - Var[R - V] / Var[R]: 1 is a perfect value function, 0 no better than a constant (nan if Var[R] = 0)."""
    return float(explained_variance_tensor(values, returns, weights))


def explained_variance_tensor(
    values: torch.Tensor, returns: torch.Tensor, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """:func:`explained_variance` as a 0-d tensor on the device of ``values`` (no host synchronisation)."""
    with torch.no_grad():
        var_returns = weighted_mean((returns - weighted_mean(returns, weights)).square(), weights)
        residual = returns - values
        var_residual = weighted_mean((residual - weighted_mean(residual, weights)).square(), weights)
        ratio = 1 - var_residual / var_returns
        return torch.where(var_returns == 0, torch.full_like(ratio, float("nan")), ratio)


# ---- auxiliary: win probability (paper D) ---------------------------------------------------------------------


def win_probability_loss(
    win_logit: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """Binary cross-entropy of the win-probability head against its label (outcome or bootstrapped, paper D)."""
    bce = F.binary_cross_entropy_with_logits(win_logit, labels.detach().to(win_logit.dtype), reduction="none")
    return weighted_mean(bce, weights)


# ---- total ------------------------------------------------------------------------------------------------------


def ppo_loss_tensors(
    *,
    logprob: torch.Tensor,
    old_logprob: torch.Tensor,
    advantages: torch.Tensor,
    entropy: torch.Tensor,
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    clip: float,
    dual_clip: float,
    value_clip: float,
    value_loss_weight: float,
    entropy_coef: float,
    weights: torch.Tensor | None = None,
    win_logit: torch.Tensor | None = None,
    win_labels: torch.Tensor | None = None,
    win_weights: torch.Tensor | None = None,
    aux_losses: dict[str, torch.Tensor] | None = None,
    aux_loss_weight: float = 1.0,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """loss = policy_loss + value_loss_weight * value_loss - entropy_coef * entropy + aux_loss_weight * aux.

    ``advantages`` are used as given (normalize them per minibatch first). ``win_weights`` defaults to
    ``weights``; pass ``weights * valid`` from :func:`fivectl.rl.gae.bootstrapped_labels`. ``aux_losses`` are
    other already-reduced auxiliary losses (e.g. net-worth rank, team objectives), reported as ``aux_<name>``.
    Returns the loss to minimize and its parts as detached 0-d tensors (on the loss's device: the learner
    reads them once per iteration, not once per gradient step).
    """
    pg_loss, pg_stats = policy_loss(logprob, old_logprob, advantages, clip, dual_clip, weights)
    v_loss = value_loss(values, old_values, returns, value_clip, weights)
    mean_entropy = weighted_mean(entropy, weights)

    aux_terms: dict[str, torch.Tensor] = dict(aux_losses or {})
    if win_logit is not None:
        if win_labels is None:
            raise BadInput("win_logit was given without win_labels")
        aux_terms["win"] = win_probability_loss(
            win_logit, win_labels, weights if win_weights is None else win_weights
        )
    aux_total = sum(aux_terms.values(), torch.zeros((), dtype=pg_loss.dtype, device=pg_loss.device))

    loss = pg_loss + value_loss_weight * v_loss - entropy_coef * mean_entropy + aux_loss_weight * aux_total
    parts = {
        "loss": loss.detach(),
        "policy_loss": pg_loss.detach(),
        "value_loss": v_loss.detach(),
        "entropy": mean_entropy.detach(),
        "aux_loss": aux_total.detach(),
        "approx_kl": pg_stats["approx_kl"],
        "clip_fraction": pg_stats["clip_fraction"],
        "dual_clip_fraction": pg_stats["dual_clip_fraction"],
        "explained_variance": explained_variance_tensor(values, returns, weights),
    }
    parts.update({f"aux_{name}": term.detach() for name, term in aux_terms.items()})
    return loss, parts


def ppo_loss(**kwargs) -> tuple[torch.Tensor, dict[str, float]]:
    """:func:`ppo_loss_tensors` with the parts as floats, for callers outside the learner's hot path."""
    loss, parts = ppo_loss_tensors(**kwargs)
    return loss, tensors_to_floats(parts)


def tensors_to_floats(parts: dict[str, torch.Tensor]) -> dict[str, float]:
    """0-d tensors -> floats with one host synchronisation for all of them."""
    if not parts:
        return {}
    device = next((v.device for v in parts.values() if v.device.type != "cpu"), torch.device("cpu"))
    values = torch.stack([v.detach().float().reshape(()).to(device) for v in parts.values()]).cpu().tolist()
    return dict(zip(parts, values, strict=True))
