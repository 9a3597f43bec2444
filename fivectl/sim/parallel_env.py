"""The embedded MOBA as a PettingZoo ``ParallelEnv``: one game of the batched core, every hero an agent.

Needs the optional extra: ``pip install 'fivectl[pettingzoo]'`` (pettingzoo and gymnasium). This module imports
without it; constructing the env without it is a one-line ``BadInput`` saying what to install.

```python
env = MobaParallelEnv(GameConfig(team_size=5, lanes=3))
obs, infos = env.reset(seed=0)              # obs["radiant_0"] -> {key: array}: one agent's encoded arrays
while env.agents:
    actions = {a: env.sample_action(a) for a in env.agents}   # or your policy: int array [4]
    obs, rewards, terminations, truncations, infos = env.step(actions)
```

``examples/pettingzoo_random.py`` plays a few games this way. Agents are ``radiant_0..k-1`` (team 0) and
``dire_0..k-1`` (team 1).

- Observation: a ``gymnasium.spaces.Dict`` with one entry per array of the schema (``ObsSchema.array_specs``),
  shapes and dtypes exact: ``Box`` float32 for ``*.float``, ``MultiDiscrete`` int32 (each column's vocabulary)
  for ``*.cat``, ``Box`` bool for ``*.mask``, ``action_mask``, ``target_mask`` and ``param_mask``.
- Action: ``MultiDiscrete([n_primary, delays, n_targets, n_offset])`` int32, the columns
  ``[primary, delay, target_slot, offset]`` of ``MobaEnv.step``. An invalid action is played as a no-op and
  counted in ``infos[a]["invalid_action"]``; an agent missing from ``actions`` does ``noop``.
  ``action_space(a).sample(mask=obs[a]["action_mask"])`` (PettingZoo's convention) samples a valid primary;
  ``env.sample_action(a)`` also honours the target mask of that primary.
- Reward: ``rewards[a]`` is the sum of the raw reward components weighted by ``RewardConfig`` (the recipe's
  ``[reward]`` weights, the defaults unless given); ``infos[a]["components"]`` holds the raw vector
  (``REWARD_COMPONENTS`` order) and ``infos[a]["game_time"]`` the time, for a learner that shapes rewards itself
  (time decay, zero sum, team spirit: ``fivectl.rl.reward.shape_rewards``).
- End: a game won or lost (an ancient destroyed, or the time limit decided by ``time_limit_result = "tiebreak"``)
  terminates every agent; a draw at the time limit truncates them. ``env.agents`` is then empty and ``reset``
  starts the next game. The core starts its next game in the same step; the observation returned with the last
  step is therefore the finished game's last encoded one (the one the final actions were chosen from), never
  the next game's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fivectl.config.game import GameConfig
from fivectl.config.reward import RewardConfig
from fivectl.errors import BadInput
from fivectl.schema.spec import ObsSchema, load_schema
from fivectl.sim.components import REWARD_COMPONENTS
from fivectl.sim.env import MobaEnv, sample_valid_actions

try:
    from gymnasium import spaces
    from pettingzoo import ParallelEnv

    PETTINGZOO_AVAILABLE = True
except ImportError:  # no extra: the module still imports; constructing the env says what to install
    spaces = None
    ParallelEnv = object
    PETTINGZOO_AVAILABLE = False

INSTALL_HINT = "pip install 'fivectl[pettingzoo]'"
TEAM_NAMES = ("radiant", "dire")


def require_pettingzoo() -> None:
    """BadInput naming the extra to install unless pettingzoo and gymnasium import."""
    if not PETTINGZOO_AVAILABLE:
        raise BadInput(f"the PettingZoo adapter needs pettingzoo and gymnasium: {INSTALL_HINT}")


class MobaParallelEnv(ParallelEnv):
    """One game of the embedded MOBA behind PettingZoo's parallel API (see the module docstring)."""

    metadata = {"name": "fivectl_moba_v1", "render_modes": [], "is_parallelizable": True}
    render_mode = None

    def __init__(
        self,
        game_cfg: GameConfig | None = None,
        schema: ObsSchema | None = None,
        reward_cfg: RewardConfig | None = None,
    ):
        require_pettingzoo()
        self.game_cfg = game_cfg or GameConfig()
        self.schema = schema or load_schema(1)
        k = self.game_cfg.team_size
        self.possible_agents = [f"{TEAM_NAMES[t]}_{i}" for t in range(2) for i in range(k)]
        self.agents: list[str] = []
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        # the weights at the start of training: a learner of its own has no progress to schedule them by
        self._weights = np.array((reward_cfg or RewardConfig()).weights_in_order(REWARD_COMPONENTS), np.float32)
        # one space object per agent, built once: PettingZoo expects the same object on every call
        self.observation_spaces = {a: observation_space_of(self.schema) for a in self.possible_agents}
        self.action_spaces = {a: action_space_of(self.schema) for a in self.possible_agents}
        self._env: MobaEnv | None = None
        self._obs: dict[str, np.ndarray] | None = None  # the current game's arrays, [A, ...] (one game)
        self._rng = np.random.default_rng()

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str):
        return self.observation_spaces[self._known(agent)]

    def action_space(self, agent: str):
        return self.action_spaces[self._known(agent)]

    @property
    def moba_env(self) -> MobaEnv | None:
        """The one-game ``MobaEnv`` underneath (its ``state`` for scripted bots and scenarios); None before reset."""
        return self._env

    # ------------------------------------------------------------------ API
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start a game. ``seed`` starts the game ``MobaEnv(..., seed=seed)`` starts, and seeds ``sample_action``;
        without one the next game of the stream begun by the last seed (a random seed on the first reset)."""
        if seed is not None or self._env is None:
            seed = int(np.random.SeedSequence().entropy % 2**63) if seed is None else int(seed)
            if seed < 0:
                raise BadInput(f"seed must be >= 0, got {seed}")
            self._env = MobaEnv(self.game_cfg, 1, seed, self.schema)
            self._rng = np.random.default_rng(seed)
            obs = self._env.reset()
        else:
            # a finished game's successor is already in the slot; restart also abandons a game in progress
            obs = self._env.restart(np.ones(1, np.bool_))
        self._obs = one_game(obs)
        self.agents = list(self.possible_agents)
        return self._split_obs(), {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]):
        if self._env is None or not self.agents:
            raise BadInput("step() needs reset() first (the game is over or not started)")
        batch = np.zeros((1, len(self.possible_agents), 4), np.int32)
        for agent, act in actions.items():
            batch[0, self._live_index(agent)] = action_row(agent, act)
        obs, comps, done, info = self._env.step(batch)
        names = list(self.agents)
        ended = bool(done[0])
        # a finished game keeps its last observation: the core's is already the next game's
        if not ended:
            self._obs = one_game(obs)
        winner = int(info["winner"][0])
        game_time = float(info["game_time"][0])
        components = {a: comps[0, self._index[a]] for a in names}
        rewards = {a: float(components[a] @ self._weights) for a in names}
        terminations = {a: ended and winner >= 0 for a in names}
        truncations = {a: ended and winner < 0 for a in names}
        infos = {
            a: {
                "components": components[a],
                "invalid_action": int(info["invalid_actions"][0, self._index[a]]),
                "game_time": game_time,
                "winner": winner,
            }
            for a in names
        }
        out_obs = self._split_obs(names)
        if ended:
            self.agents = []
        return out_obs, rewards, terminations, truncations, infos

    def sample_action(self, agent: str) -> np.ndarray:
        """A uniformly random valid action for a live ``agent``: int32 ``[4]`` (from its action and target masks)."""
        i = self._live_index(agent)
        o = self._obs
        return sample_valid_actions(
            self._rng,
            o["action_mask"][i],
            o["target_mask"][i],
            o["param_mask"][i],
            self.schema.action.delays,
            self.schema.action.n_offset,
        )

    def render(self) -> None:
        raise BadInput("MobaParallelEnv has no render mode; record games with the replay tools instead")

    def close(self) -> None:
        self._env = None
        self._obs = None
        self.agents = []

    # ------------------------------------------------------------------ internals
    def _known(self, agent: str) -> str:
        if agent not in self._index:
            raise BadInput(f"unknown agent {agent!r} (agents: {', '.join(self.possible_agents)})")
        return agent

    def _live_index(self, agent: str) -> int:
        if agent not in self.agents:
            state = "unknown" if agent not in self._index else "not playing (its game is over)"
            raise BadInput(f"agent {agent!r} is {state}; live agents: {', '.join(self.agents) or 'none'}")
        return self._index[agent]

    def _split_obs(self, names: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
        names = self.possible_agents if names is None else names
        return {a: {key: arr[self._index[a]] for key, arr in self._obs.items()} for a in names}


def one_game(obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Game 0 of a batched observation, copied: ``[A, ...]`` arrays the core will not write into again."""
    return {key: np.array(arr[0]) for key, arr in obs.items()}


def action_row(agent: str, act: Any) -> np.ndarray:
    row = np.asarray(act)
    if row.shape != (4,) or not np.issubdtype(row.dtype, np.integer):
        raise BadInput(
            f"action of {agent!r}: expected 4 integers [primary, delay, target_slot, offset], got {row.tolist()!r}"
        )
    return row.astype(np.int32)


def observation_space_of(schema: ObsSchema):
    """One agent's observation space: a ``spaces.Dict`` of the schema's arrays, shapes and dtypes exact."""
    cat_vocab = {g.name: categorical_vocab(g) for g in schema.groups if g.n_cat}
    entries = {}
    for key, (shape, dtype) in schema.array_specs().items():
        group = key.split(".")[0]  # "heroes.cat" -> "heroes"
        if dtype == "float32":
            entries[key] = spaces.Box(-np.inf, np.inf, shape=shape, dtype=np.float32)
        elif dtype == "int32":
            entries[key] = spaces.MultiDiscrete(np.broadcast_to(cat_vocab[group], shape), dtype=np.int32)
        elif dtype == "bool":
            entries[key] = spaces.Box(0, 1, shape=shape, dtype=np.bool_)
        else:
            raise BadInput(f"schema v{schema.version}: {key} has dtype {dtype}, which has no gymnasium space")
    return spaces.Dict(entries)


def categorical_vocab(group) -> np.ndarray:
    """The vocabulary of each column of ``group.cat`` (a field of shape ``[k]`` takes k columns)."""
    return np.concatenate([np.full(f.width, f.vocab, np.int64) for f in group.cat_fields])


def action_space_of(schema: ObsSchema):
    """``MultiDiscrete`` over the action columns ``[primary, delay, target_slot, offset]``."""
    a = schema.action
    return MobaActionSpace([a.n_primary, a.delays, max(schema.n_targets, 1), a.n_offset], dtype=np.int32)


if PETTINGZOO_AVAILABLE:

    class MobaActionSpace(spaces.MultiDiscrete):
        """The action columns' ``MultiDiscrete`` whose ``sample(mask=...)`` also takes an observation's
        ``action_mask`` (bool ``[n_primary]``), as PettingZoo's tools pass it: a valid primary, the other columns
        uniform (the target mask of the primary is not consulted: ``MobaParallelEnv.sample_action`` does that)."""

        def sample(self, mask=None, **kwargs):
            if isinstance(mask, np.ndarray) and mask.dtype == np.bool_ and mask.shape == (int(self.nvec[0]),):
                mask = (mask.astype(np.int8), *(np.ones(int(n), np.int8) for n in self.nvec[1:]))
            return super().sample(mask=mask, **kwargs)


__all__ = ["INSTALL_HINT", "PETTINGZOO_AVAILABLE", "MobaParallelEnv", "require_pettingzoo"]
