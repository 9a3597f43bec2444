"""A PettingZoo-style parallel API over one game of the batched core.

```python
env = MobaParallelEnv(GameConfig(team_size=5, lanes=3))
obs, infos = env.reset(seed=0)              # obs["radiant_0"] -> {key: array} (one agent's arrays)
while env.agents:
    actions = {a: env.sample_action(a) for a in env.agents}   # or your policy; int array [4]
    obs, rewards, terminations, truncations, infos = env.step(actions)
```

Agents are ``radiant_0..k-1`` (team 0) and ``dire_0..k-1`` (team 1). An action is the int array
``[primary, delay, target_slot, offset]``; a missing agent does ``noop``. ``rewards[a]`` is the weighted sum
of the raw components with the recipe's reward weights (no zero-sum/time decay; ``infos[a]["components"]``
has the raw vector). A won/lost game terminates every agent; a game stopped by the time limit truncates them.
After the last step ``env.agents`` is empty; call ``reset`` for the next game.
"""

from __future__ import annotations

import numpy as np

from fivectl.config.game import GameConfig
from fivectl.config.reward import RewardConfig
from fivectl.errors import BadInput
from fivectl.schema.spec import ObsSchema, load_schema
from fivectl.sim.components import REWARD_COMPONENTS
from fivectl.sim.env import MobaEnv, sample_valid_actions

TEAM_NAMES = ("radiant", "dire")


class MobaParallelEnv:
    """Parallel multi-agent API for a single game (PettingZoo ``ParallelEnv`` conventions)."""

    metadata = {"name": "fivectl_moba_v1", "render_modes": []}

    def __init__(
        self,
        game_cfg: GameConfig | None = None,
        schema: ObsSchema | None = None,
        reward_cfg: RewardConfig | None = None,
    ):
        self.game_cfg = game_cfg or GameConfig()
        self.schema = schema or load_schema(1)
        k = self.game_cfg.team_size
        self.possible_agents = [f"{TEAM_NAMES[t]}_{i}" for t in range(2) for i in range(k)]
        self.agents: list[str] = []
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        self._weights = self._component_weights(reward_cfg or RewardConfig())
        self._env: MobaEnv | None = None
        self._obs: dict[str, np.ndarray] | None = None
        self._rng = np.random.default_rng(0)

    @staticmethod
    def _component_weights(cfg: RewardConfig) -> np.ndarray:
        return np.array([float(getattr(cfg, name, 0.0)) for name in REWARD_COMPONENTS], dtype=np.float32)

    def observation_space(self, agent: str) -> dict[str, tuple[tuple[int, ...], str]]:
        """Per-agent array shapes and dtypes (``schema.array_specs()``)."""
        return self.schema.array_specs()

    def action_space(self, agent: str) -> tuple[int, int, int, int]:
        """Sizes of the four action columns: primary, delay, target slot, offset."""
        a = self.schema.action
        return (a.n_primary, a.delays, max(self.schema.n_targets, 1), a.n_offset)

    def reset(self, seed: int | None = None, options: dict | None = None):
        seed = 0 if seed is None else int(seed)
        self._env = MobaEnv(self.game_cfg, 1, seed, self.schema)
        self._rng = np.random.default_rng(seed)
        self._obs = self._env.reset()
        self.agents = list(self.possible_agents)
        return self._split_obs(), {a: {} for a in self.agents}

    def sample_action(self, agent: str) -> np.ndarray:
        """A uniformly random valid action for ``agent`` (from the current masks)."""
        i = self._agent_index(agent)
        o = self._obs
        return sample_valid_actions(
            self._rng,
            o["action_mask"][0, i],
            o["target_mask"][0, i],
            o["param_mask"][0, i],
            self.schema.action.delays,
            self.schema.action.n_offset,
        )

    def step(self, actions: dict[str, np.ndarray]):
        if self._env is None or not self.agents:
            raise BadInput("step() needs reset() first (the game is over or not started)")
        batch = np.zeros((1, len(self.possible_agents), 4), np.int32)
        for agent, act in actions.items():
            batch[0, self._agent_index(agent)] = np.asarray(act, dtype=np.int32).reshape(4)
        # Read the final figures before the auto-reset replaces the game.
        obs, comps, done, info = self._env.step(batch)
        self._obs = obs
        names = list(self.agents)
        rewards = {a: float(comps[0, self._index[a]] @ self._weights) for a in names}
        ended = bool(done[0])
        winner = int(info["winner"][0])
        term = {a: ended and winner >= 0 for a in names}
        trunc = {a: ended and winner < 0 for a in names}
        infos = {
            a: {
                "components": comps[0, self._index[a]],
                "invalid_action": int(info["invalid_actions"][0, self._index[a]]),
                "game_time": float(info["game_time"][0]),
                "winner": winner,
            }
            for a in names
        }
        out_obs = self._split_obs()
        if ended:
            self.agents = []
        return out_obs, rewards, term, trunc, infos

    def _agent_index(self, agent: str) -> int:
        if agent not in self._index:
            raise BadInput(f"unknown agent {agent!r} (agents: {', '.join(self.possible_agents)})")
        return self._index[agent]

    def _split_obs(self) -> dict[str, dict[str, np.ndarray]]:
        return {a: {k: v[0, i] for k, v in self._obs.items()} for a, i in self._index.items()}

    def close(self) -> None:
        self._env = None
        self.agents = []
