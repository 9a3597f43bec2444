"""Past-version opponents inside a rollout worker (paper appendix N).

Each game has an opponent: -1 for the latest parameters (both teams are the learner and both train), or a past
version that plays one side (chosen at random per game) while the learner plays the other. Opponents are drawn
only when a game starts, from the pool published with the parameters, and their networks are loaded from the
run's checkpoints (a few kept in memory).
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch

from fivectl.config import Recipe
from fivectl.model import PolicyNet
from fivectl.schema import ObsSchema
from fivectl.store.checkpoint import CheckpointStore

LATEST = -1


class OpponentSet:
    """Who plays each game's opponent side, and the cached networks of past versions."""

    def __init__(
        self,
        recipe: Recipe,
        schema: ObsSchema,
        run_dir: Path | None,
        games: int,
        rng: np.random.Generator,
        cache_size: int = 4,
    ):
        self.recipe = recipe
        self.schema = schema
        self.store = CheckpointStore(Path(run_dir) / "checkpoints.zarr") if run_dir is not None else None
        self.rng = rng
        self.games = games
        self.team_size = recipe.game.team_size
        self.cache_size = cache_size
        self.opponent = np.full(games, LATEST, dtype=np.int32)
        self.learner_side = np.zeros(games, dtype=np.int8)
        self.nets: OrderedDict[int, PolicyNet] = OrderedDict()
        self.missing = 0
        agents = games * 2 * self.team_size
        lstm = recipe.model.lstm_size
        self.state = (torch.zeros(1, agents, lstm), torch.zeros(1, agents, lstm))

    def assign(self, games: np.ndarray, pool: tuple[np.ndarray, np.ndarray]) -> None:
        """Draw opponents for ``games`` (bool [G]) that are starting: latest with ``latest_fraction``, else a past
        version with probability p_i (paper N: p ∝ exp(q))."""
        idx = np.flatnonzero(games)
        if idx.size == 0:
            return
        versions, probs = pool
        latest = self.rng.random(idx.size) < self.recipe.selfplay.latest_fraction
        if versions.size == 0:
            latest[:] = True
        picks = self.rng.choice(versions, size=idx.size, p=probs) if versions.size else np.zeros(idx.size)
        self.opponent[idx] = np.where(latest, LATEST, picks).astype(np.int32)
        self.learner_side[idx] = self.rng.integers(0, 2, size=idx.size).astype(np.int8)

    def train_mask(self) -> np.ndarray:
        """bool [G*2k]: agents whose samples the learner trains on (both teams against latest, else its side)."""
        k = self.team_size
        team = np.repeat(np.arange(2), k)[None, :]  # [1, 2k]
        mine = (self.opponent[:, None] == LATEST) | (team == self.learner_side[:, None])
        return mine.reshape(-1)

    def opponent_rows(self) -> dict[int, np.ndarray]:
        """Past version -> the agent rows it plays."""
        mask = ~self.train_mask()
        rows_version = np.repeat(self.opponent, 2 * self.team_size)
        return {
            int(v): np.flatnonzero(mask & (rows_version == v))
            for v in np.unique(self.opponent[self.opponent >= 0])
        }

    def net(self, version: int) -> PolicyNet | None:
        if version in self.nets:
            self.nets.move_to_end(version)
            return self.nets[version]
        if self.store is None:
            return None
        try:
            ckpt = self.store.load(version)
        except Exception:  # noqa: BLE001 - a pruned or unreadable version: play the latest instead
            self.missing += 1
            return None
        net = PolicyNet(self.schema, self.recipe.model, self.team_size, obs_clip=self.recipe.train.obs_clip)
        keys = ckpt.attrs["model_keys"]
        net.load_state_dict({k: torch.from_numpy(np.array(ckpt.arrays["model"][k])) for k in keys})
        net.eval()
        self.nets[version] = net
        self.evict_unused()
        return net

    def evict_unused(self) -> None:
        """Keep at most ``cache_size`` networks, but never one a running game still plays: reloading a
        checkpoint every step would stall the worker."""
        in_use = set(int(v) for v in self.opponent[self.opponent >= 0])
        for version in list(self.nets):
            if len(self.nets) <= self.cache_size:
                break
            if version not in in_use:
                del self.nets[version]

    @torch.no_grad()
    def act(self, obs: dict[str, torch.Tensor], first: torch.Tensor, actions: torch.Tensor) -> None:
        """Overwrite ``actions`` for the rows that past versions play, with those versions' choices."""
        for version, rows in self.opponent_rows().items():
            if rows.size == 0:
                continue
            net = self.net(version)
            if net is None:
                self.opponent[self.opponent == version] = LATEST  # its games go on against the latest
                continue
            index = torch.from_numpy(rows)
            state = tuple(s[:, index] for s in self.state)
            out = net.act({k: v[index] for k, v in obs.items()}, state, first[index])
            actions[index] = out.actions
            for s, new in zip(self.state, out.state, strict=True):
                s[:, index] = new
