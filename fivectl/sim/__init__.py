"""The embedded MOBA (DESIGN.md §2): batched numba core, the ``MobaEnv`` API and a PettingZoo-style wrapper.

See ``fivectl.sim.state`` for the state arrays scripted bots read and ``fivectl.sim.data`` for the game data.
"""

from fivectl.sim.components import COMPONENT_INDEX, REWARD_COMPONENTS
from fivectl.sim.env import PRIMARY_ACTIONS, STAT_NAMES, MobaEnv, sample_valid_actions

__all__ = ["COMPONENT_INDEX", "PRIMARY_ACTIONS", "REWARD_COMPONENTS", "STAT_NAMES", "MobaEnv", "sample_valid_actions"]
