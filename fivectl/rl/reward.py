"""Reward shaping: raw per-hero event components -> the reward each hero is trained on (paper appendix G).

The game reports, per hero and step, the raw components named in ``fivectl.sim.components.REWARD_COMPONENTS``
(``[..., A, C]``, agents ordered ``[team0 heroes, team1 heroes]``). The shaped reward is built in four steps:

1. Weighted sum (paper Figure 6 / Table 6):           ρ_i = Σ_c w_c · x_{i,c}
2. Game time weighting (G, "Game time weighting"):   every term but win/loss is scaled by
                                                       time_decay ^ (T / (decay_minutes · 60 s))
                                                       (paper: 0.6 ^ (T / 10 min))
3. Zero sum (G, "Zero sum"):                          ρ_i ← ρ_i − mean_{j ∈ enemies} ρ_j
4. Team spirit τ (G, "Team Spirit"):                  r_i = (1 − τ) ρ_i + τ · mean_{j ∈ team} ρ_j

Steps 3 and 4 are linear maps over the agents of one game, so they commute with each other and with the sum
over components: applying them to each component separately and summing gives the same reward, which is how
``shaped_components`` attributes the final reward to components for metrics.
All functions accept any leading batch dimensions (``[G, ...]`` or ``[T, G, ...]``).
"""

from __future__ import annotations

import numpy as np

from fivectl.config.reward import RewardConfig
from fivectl.errors import BadInput
from fivectl.sim import COMPONENT_INDEX, REWARD_COMPONENTS

WIN = COMPONENT_INDEX["win"]


def component_weights(weights: RewardConfig, off_lane: float | None = None) -> np.ndarray:
    """The recipe's weight of every component, in ``REWARD_COMPONENTS`` order: float32 ``[C]``.

    ``off_lane``: the lane penalty's schedule evaluated at the current point of training (the learner publishes
    it with the parameters, as team spirit); ``None``: its value at the start.
    """
    return np.array(weights.weights_in_order(REWARD_COMPONENTS, off_lane), dtype=np.float32)


def time_weight(game_time_s: np.ndarray, weights: RewardConfig) -> np.ndarray:
    """The game time weighting factor time_decay ^ (T / (decay_minutes · 60)) for each game time T (seconds)."""
    exponent = np.asarray(game_time_s, dtype=np.float64) / (weights.decay_minutes * 60.0)
    return np.power(weights.time_decay, exponent).astype(np.float32)


def weighted_components(
    components: np.ndarray, weights: RewardConfig, game_time_s: np.ndarray, off_lane: float | None = None
) -> np.ndarray:
    """What each hero earned by component: w_c · x_c, time-weighted except win. ``[..., A, C]`` float32.

    Summing over the last axis gives ρ_i before zero sum and team spirit. Averaged over heroes this is the
    "reward by component" metric: where the agent's reward comes from.
    """
    components = np.asarray(components, dtype=np.float32)
    _check_components(components)
    decay = time_weight(game_time_s, weights)[
        ..., None, None
    ]  # [..., 1, 1] broadcasts over agents and components
    scale = np.broadcast_to(decay, (*decay.shape[:-1], len(REWARD_COMPONENTS))).copy()
    scale[..., WIN] = 1.0  # the win/loss reward is not time-weighted (paper G)
    return components * component_weights(weights, off_lane) * scale


def zero_sum(rho: np.ndarray, team_size: int) -> np.ndarray:
    """Subtract the enemy team's mean from each hero's reward. ``rho`` ``[..., A]``, agents on the last axis."""
    teams = _split_teams(rho, team_size)  # [..., 2, k]
    enemy_mean = np.flip(
        teams.mean(axis=-1, keepdims=True), axis=-2
    )  # [..., 2, 1]: team 0 gets team 1's mean
    return (teams - enemy_mean).reshape(rho.shape)


def team_spirit_mix(rho: np.ndarray, team_size: int, tau: float) -> np.ndarray:
    """r_i = (1 − τ) ρ_i + τ · mean over i's team of ρ. ``rho`` ``[..., A]``, agents on the last axis."""
    if not 0.0 <= tau <= 1.0:
        raise BadInput(f"team spirit must be in [0, 1], got {tau}")
    teams = _split_teams(rho, team_size)
    return ((1.0 - tau) * teams + tau * teams.mean(axis=-1, keepdims=True)).reshape(rho.shape)


def shaped_components(
    components: np.ndarray,
    weights: RewardConfig,
    game_time_s: np.ndarray,
    team_size: int,
    team_spirit: float,
    off_lane: float | None = None,
) -> np.ndarray:
    """The final reward split by component: ``[..., A, C]`` float32 whose sum over C is :func:`shape_rewards`."""
    earned = weighted_components(components, weights, game_time_s, off_lane)
    return _shape_agents(earned, weights, team_size, team_spirit, agent_axis_from_end=2)


def shape_rewards(
    components: np.ndarray,
    weights: RewardConfig,
    game_time_s: np.ndarray,
    team_size: int,
    team_spirit: float,
    off_lane: float | None = None,
) -> np.ndarray:
    """The reward each hero is trained on: ``components`` ``[..., A, C]`` -> float32 ``[..., A]``.

    ``game_time_s`` ``[...]`` is the game time (seconds) at which the components were earned; ``team_spirit`` is
    τ and ``off_lane`` the lane penalty at the current point of training (the recipe's schedules evaluated by the
    caller; ``off_lane`` ``None``: its start).
    """
    rho = weighted_components(components, weights, game_time_s, off_lane).sum(axis=-1)
    return _shape_agents(rho, weights, team_size, team_spirit, agent_axis_from_end=1)


def component_means(earned: np.ndarray) -> dict[str, float]:
    """Mean per hero and step of each component of ``earned`` ``[..., A, C]`` (e.g. :func:`weighted_components`)."""
    flat = np.asarray(earned, dtype=np.float64).reshape(-1, len(REWARD_COMPONENTS))
    means = flat.mean(axis=0) if len(flat) else np.zeros(len(REWARD_COMPONENTS))
    return {name: float(v) for name, v in zip(REWARD_COMPONENTS, means, strict=True)}


def _shape_agents(
    rho: np.ndarray, weights: RewardConfig, team_size: int, tau: float, agent_axis_from_end: int
) -> np.ndarray:
    """Zero sum (if the recipe asks for it) then team spirit, over the agent axis ``-agent_axis_from_end``."""
    moved = np.moveaxis(rho, -agent_axis_from_end, -1)  # agents last: [..., *rest, A]
    if moved.shape[-1] != 2 * team_size:
        raise BadInput(
            f"rewards have {moved.shape[-1]} agents per game, expected 2 x team_size = {2 * team_size}"
        )
    if weights.zero_sum:
        moved = zero_sum(moved, team_size)
    moved = team_spirit_mix(moved, team_size, float(tau))
    return np.moveaxis(moved, -1, -agent_axis_from_end).astype(np.float32, copy=False)


def _split_teams(x: np.ndarray, team_size: int) -> np.ndarray:
    """``[..., A]`` (agents last) -> ``[..., 2, k]``."""
    if x.shape[-1] != 2 * team_size:
        raise BadInput(
            f"rewards have {x.shape[-1]} agents per game, expected 2 x team_size = {2 * team_size}"
        )
    return x.reshape(*x.shape[:-1], 2, team_size)


def _check_components(components: np.ndarray) -> None:
    if components.ndim < 2 or components.shape[-1] != len(REWARD_COMPONENTS):
        raise BadInput(
            f"reward components must be [..., agents, {len(REWARD_COMPONENTS)}], got shape {list(components.shape)}"
        )


__all__ = [
    "component_means",
    "component_weights",
    "shape_rewards",
    "shaped_components",
    "team_spirit_mix",
    "time_weight",
    "weighted_components",
    "zero_sum",
]
