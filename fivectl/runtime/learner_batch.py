"""From fragments copied out of their slots to what the learner and the rollout files take."""

from __future__ import annotations

import numpy as np
import torch

from fivectl.rl.learner import FragmentBatch, concat_fragments
from fivectl.rl.normalize import RewardScaler


def learner_batch(
    fragments: list[tuple[int, dict[str, np.ndarray]]], scalers: list[RewardScaler], gamma: float, scale: bool
) -> FragmentBatch:
    """(worker, fragment) pairs -> one learner batch; rewards scaled by each worker's running return std."""
    parts = []
    for worker, f in fragments:
        rewards = torch.from_numpy(f["reward"])
        dones = torch.from_numpy(f["done"])
        if scale:
            scaler = scalers[min(worker, len(scalers) - 1)]
            rewards = scaler(rewards, dones, gamma)
        obs = {k[4:]: torch.from_numpy(v) for k, v in f.items() if k.startswith("obs.")}
        parts.append(
            FragmentBatch(
                obs=obs,
                actions=torch.from_numpy(f["actions"]).long(),
                logprobs=torch.from_numpy(f["logprob"]),
                values=torch.from_numpy(f["value"]),
                rewards=rewards.float(),
                dones=dones,
                first=torch.from_numpy(f["first"]),
                last_values=torch.from_numpy(f["last_value"]),
                window_states=(
                    torch.from_numpy(f["h_win"]).unsqueeze(1),
                    torch.from_numpy(f["c_win"]).unsqueeze(1),
                ),
                outcomes=torch.from_numpy(f["outcome"]),
                last_win_probs=torch.from_numpy(f["last_win_prob"]),
                mask=torch.from_numpy(f["train"]).float(),
                networth=torch.from_numpy(f["networth"]),
                objective_events=_optional_tensor(f, "objective_events"),
                last_networth_rank=torch.from_numpy(f["last_networth_rank"]),
                last_objectives=_optional_tensor(f, "last_objectives"),
            )
        )
    if len(parts) == 1:
        return parts[0]
    return concat_fragments(parts)


def _optional_tensor(fragment: dict[str, np.ndarray], key: str) -> torch.Tensor | None:
    return torch.from_numpy(fragment[key]) if key in fragment else None


def per_step_arrays(fragment: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The [T, ...] arrays of a fragment (observations, actions, rewards, ...): what rollout files keep."""
    steps = fragment["reward"].shape[0]
    return {
        k: v
        for k, v in fragment.items()
        if v.ndim >= 1 and v.shape[0] == steps and k not in ("h_win", "c_win")
    }
