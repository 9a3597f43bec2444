"""Statistics of new observation columns from a few simulated games (for ``surgery add-obs``).

A new column starts with zero weights, so its normalizer statistics do not matter for the output, but they
matter the moment training gives it a weight: with the prior (mean 0, variance 1) a respawn timer of 40 s would be
clipped at +5 and its gradient cut. Scripted bots (``bot:easy`` on both sides) play a few short games encoded with
the new schema; the per-column mean and variance of what they see (observed unit slots only, as in training)
seed the statistics, with their own small count so that real training data soon outweighs them.
"""

from __future__ import annotations

import numpy as np
import torch

from fivectl.config.game import GameConfig
from fivectl.errors import BadInput
from fivectl.schema.spec import ObsSchema
from fivectl.sim import BotMemory, MobaEnv, bot_actions

Stats = dict[str, tuple[torch.Tensor, torch.Tensor, int]]


def calibrate_columns(
    schema: ObsSchema, game: GameConfig, games: int = 8, steps: int = 300, seed: int = 0, level: str = "easy"
) -> Stats:
    """``{group: (mean [n_float], var [n_float], rows)}`` over ``steps`` decisions of ``games`` bot games."""
    try:
        env = MobaEnv(game, games, seed, schema)
    except BadInput as e:
        raise BadInput(f"{e} (calibration plays games encoded with the new schema; --calibrate-games 0 skips it)") from None
    obs = env.reset()
    memories = [BotMemory.empty(games, env.team_size) for _ in range(2)]
    rng = np.random.default_rng(seed)
    rows: dict[str, list[np.ndarray]] = {g.name: [] for g in schema.groups if g.n_float}
    k = env.team_size
    for _ in range(steps):
        for g in schema.groups:
            if not g.n_float:
                continue
            x = obs[f"{g.name}.float"].reshape(-1, g.n_float)
            if g.kind == "unitset":
                x = x[obs[f"{g.name}.mask"].reshape(-1)]
            rows[g.name].append(np.array(x, dtype=np.float64))
        actions = np.zeros((games, 2 * k, 4), dtype=np.int32)
        for side in (0, 1):
            team = np.full(games, side, dtype=np.int64)
            actions[:, side * k : (side + 1) * k] = bot_actions(env, obs, team, level, memories[side], rng)
        obs, _, done, _ = env.step(actions)
        for memory in memories:
            memory.forget(done)
    out: Stats = {}
    for name, parts in rows.items():
        data = np.concatenate(parts) if parts else np.zeros((0, 1))
        if len(data) < 2:
            continue
        out[name] = (torch.from_numpy(data.mean(0)), torch.from_numpy(data.var(0)), int(len(data)))
    return out
