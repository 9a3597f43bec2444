"""The model a draft reads: a checkpoint's network, schema and game, and its first-step win probability.

Paper App. D.2: the win probability at the start of a game estimates the strength of a matchup, because the
lineup is the main thing that varies in the first frame. :func:`first_frame_win_probs` builds the first-frame
observations of both teams for a batch of chosen lineups with the game itself (``MobaEnv.set_lineups`` and one
batched reset + encode, no per-lineup Python), runs the network's first step with a zero LSTM state and combines
the two teams' predictions into P(team 0 wins).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from fivectl.config import GameConfig, recipe_from_dict
from fivectl.errors import BadInput
from fivectl.model import PolicyNet
from fivectl.schema import ObsSchema

ENEMY_LINEUP = ("global", "enemy_lineup")


@dataclass
class DraftModel:
    spec: str  # RUN_DIR@VERSION as given
    run: str
    version: int
    net: PolicyNet
    schema: ObsSchema
    game: GameConfig

    @property
    def team_size(self) -> int:
        return self.game.team_size

    @property
    def game_name(self) -> str:
        return f"{self.team_size}v{self.team_size}"


def load_draft_model(spec: str) -> DraftModel:
    """The checkpoint ``RUN_DIR@VERSION`` (or ``@latest``) with the game section it was trained on."""
    from fivectl.evaluate.policy_agent import load_policy, resolve_version, split_spec
    from fivectl.store.checkpoint import CheckpointStore
    from fivectl.store.rundir import RunDir

    run_dir, version, weights = split_spec(spec)
    run = RunDir.open(run_dir)
    wanted = resolve_version(CheckpointStore(run.checkpoints_path), version, spec)
    net, attrs, loaded = load_policy(run_dir, wanted, weights)
    game = recipe_from_dict({"game": attrs["game_config"]}).game if "game_config" in attrs else GameConfig()
    game = replace(game, team_size=int(attrs["team_size"]))
    return DraftModel(spec, str(Path(run_dir)), int(loaded), net, net.schema, game)


def has_enemy_lineup(schema: ObsSchema) -> bool:
    group, name = ENEMY_LINEUP
    return any(g.name == group and any(f.name == name for f in g.fields) for g in schema.groups)


def require_enemy_lineup(model: DraftModel) -> None:
    """Without the enemy heroes in the first frame, the win head cannot tell matchups apart (schema v3)."""
    if not has_enemy_lineup(model.schema):
        raise BadInput(
            f"model without the enemy lineup in its schema (v{model.schema.version}); "
            f"run fivectl surgery add-obs {model.run} --schema 3 and train further"
        )


def first_frame_game(game: GameConfig) -> GameConfig:
    """The game whose first frame is rated: no start perturbation or random items (their mean is the
    unperturbed start); lane assignments stay random when the game has three lanes (averaged over samples)."""
    return replace(
        game,
        randomize_initial_state=False,
        randomize_items=False,
        randomize_boss_health=False,
        randomize_lanes=game.randomize_lanes and game.lanes == 3,
    )


def lanes_matter(game: GameConfig) -> bool:
    return game.lanes == 3 and game.randomize_lanes


class FirstFrame:
    """A reusable batch of ``batch`` games for rating lineups ``[m <= batch, 2, k]`` by their first frame."""

    def __init__(self, model: DraftModel, batch: int, seed: int = 0, lane_samples: int = 1):
        from fivectl.sim import MobaEnv

        if batch < 1:
            raise BadInput(f"--batch: must be >= 1, got {batch}")
        if lane_samples < 1:
            raise BadInput(f"--lane-samples: must be >= 1, got {lane_samples}")
        self.model, self.batch, self.seed = model, int(batch), int(seed)
        self.lane_samples = lane_samples if lanes_matter(model.game) else 1
        self.env = MobaEnv(first_frame_game(model.game), self.batch, self.seed, model.schema)
        k = model.team_size
        self.state = model.net.initial_state(self.batch * 2 * k)
        self.first = torch.ones(self.batch * 2 * k, dtype=torch.bool)

    @torch.inference_mode()
    def win_probs(self, lineups: np.ndarray) -> np.ndarray:
        """float64 [m]: P(team 0 wins) of each lineup (hero ids [m, 2, k], team 0 first), averaged over lane
        samples; each team's prediction is the mean over its heroes, and team 0's and (1 - team 1's) are
        averaged so that both teams' first observations count."""
        m, k = len(lineups), self.model.team_size
        if m > self.batch:
            raise BadInput(f"{m} lineups do not fit a batch of {self.batch}")
        padded = np.empty((self.batch, 2, k), dtype=np.int32)
        padded[:m] = lineups
        padded[m:] = lineups[0]
        self.env.set_lineups(padded)
        total = np.zeros(m)
        for sample in range(self.lane_samples):
            self.env.seed = self.seed + sample  # another draw of the lane assignments
            obs = self.env.reset()
            flat = {
                key: torch.from_numpy(np.ascontiguousarray(v.reshape(self.batch * 2 * k, *v.shape[2:])))
                for key, v in obs.items()
            }
            win = self.model.net.act(flat, self.state, self.first).win_prob.double().numpy()
            by_team = win.reshape(self.batch, 2, k).mean(axis=2)[:m]
            total += 0.5 * (by_team[:, 0] + 1.0 - by_team[:, 1])
        return total / self.lane_samples
