"""The embedded MOBA: batched numba core, the ``MobaEnv`` API and a PettingZoo-style wrapper.

See ``fivectl.sim.state`` for the state arrays scripted bots read and ``fivectl.sim.data`` for the game data.
``MobaEnv`` and friends are imported lazily so that ``fivectl.schema.encoder`` can import the core without a cycle.
"""

from fivectl.sim.components import COMPONENT_INDEX, REWARD_COMPONENTS

_LAZY = {"MobaEnv", "PRIMARY_ACTIONS", "STAT_NAMES", "sample_valid_actions"}


def __getattr__(name):
    if name in _LAZY:
        from fivectl.sim import env

        return getattr(env, name)
    raise AttributeError(f"module 'fivectl.sim' has no attribute {name!r}")


__all__ = [
    "COMPONENT_INDEX",
    "PRIMARY_ACTIONS",
    "REWARD_COMPONENTS",
    "STAT_NAMES",
    "MobaEnv",
    "sample_valid_actions",
]
