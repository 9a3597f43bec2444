"""Agents that play matches, named by spec strings: ``random``, ``bot:passive|easy|medium`` (and, registered by
other packages, checkpoint policies such as ``RUN_DIR@latest``).

An agent plays one side of a whole batch of games at once. Every step it gets the environment's full observation
dict (``key -> [G, A, ...]``, agents ordered ``[team0 heroes, team1 heroes]``), which team it controls in each
game (``team`` int ``[G]``, may differ per game because sides alternate) and which games just started
(``first`` bool ``[G]``: reset any per-game memory there), and returns the actions of its heroes: int32
``[G, team_size, 4]`` with columns (primary, delay, target_slot, offset) — the same action interface as the
policy, so invalid actions from a bot are counted by the game like a policy's.

New kinds of agents plug in without changing this module::

    register_agent_kind("checkpoint", lambda spec: "@" in spec, make_policy_agent, examples=("RUN_DIR@latest",))

where ``make_policy_agent(spec: str) -> Agent``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from fivectl.errors import BadInput
from fivectl.sim import BOT_LEVELS, BotMemory, bot_actions


@runtime_checkable
class Agent(Protocol):
    """One side of a batch of games. ``spec`` is the string that names it (shown in results)."""

    spec: str
    schema_version: int | None
    """Observation schema the agent reads (None: any)."""

    def reset(self, num_games: int, seed: int | None = None) -> None:
        """Prepare to play ``num_games`` games at once; ``seed`` makes the agent's randomness reproducible."""
        ...

    def act(self, env: Any, obs: dict[str, np.ndarray], team: np.ndarray, first: np.ndarray) -> np.ndarray:
        """Actions int32 ``[G, team_size, 4]`` of the heroes of ``team[g]`` in each game ``g``."""
        ...


AgentFactory = Callable[[str], Agent]


@dataclass(frozen=True)
class AgentKind:
    name: str
    matches: Callable[[str], bool]
    factory: AgentFactory
    examples: tuple[str, ...]


_KINDS: dict[str, AgentKind] = {}


def register_agent_kind(
    name: str,
    matches: str | Callable[[str], bool],
    factory: AgentFactory,
    examples: tuple[str, ...] | list[str] = (),
) -> None:
    """Add (or replace, by ``name``) a kind of agent spec.

    ``matches`` is a predicate on the spec, or a string: ``"random"`` matches exactly that spec, ``"bot:"``
    (ending in a colon) every spec starting with it. ``factory(spec)`` builds the agent and raises
    :class:`BadInput` for a spec it cannot build. ``examples`` are listed in errors and help.
    """
    if isinstance(matches, str):
        pattern = matches
        if pattern.endswith(":"):
            predicate = lambda spec: spec.startswith(pattern)  # noqa: E731
        else:
            predicate = lambda spec: spec == pattern  # noqa: E731
    else:
        predicate = matches
    _KINDS[name] = AgentKind(name=name, matches=predicate, factory=factory, examples=tuple(examples))


def known_agent_specs() -> list[str]:
    return [example for kind in _KINDS.values() for example in kind.examples]


def parse_agent(spec: str) -> Agent:
    """The agent a spec names; an unknown spec is a :class:`BadInput` that lists the known ones."""
    spec = spec.strip()
    for kind in _KINDS.values():
        if kind.matches(spec):
            return kind.factory(spec)
    raise unknown_agent(spec)


def unknown_agent(spec: str, choices: list[str] | None = None) -> BadInput:
    known = choices if choices is not None else known_agent_specs()
    near = difflib.get_close_matches(spec, known, n=1, cutoff=0.5)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    return BadInput(f"unknown agent {spec!r}{hint}; known agents: {', '.join(known)}")


def team_agent_index(team: np.ndarray, team_size: int) -> np.ndarray:
    """Indices on the agent axis of the heroes of ``team[g]``: int ``[G, team_size]``."""
    return np.asarray(team, dtype=np.int64)[:, None] * team_size + np.arange(team_size)


def select_team(obs: dict[str, np.ndarray], team: np.ndarray, team_size: int) -> dict[str, np.ndarray]:
    """The rows of ``team[g]``'s heroes in each game: every array ``[G, A, ...]`` -> ``[G, team_size, ...]``."""
    rows = team_agent_index(team, team_size)
    games = np.arange(len(rows))[:, None]
    return {key: value[games, rows] for key, value in obs.items()}


def act_in(
    agent: Agent, env: Any, obs: dict[str, np.ndarray], team: np.ndarray, first: np.ndarray, rows: np.ndarray
) -> np.ndarray:
    """Actions int32 ``[len(rows), team_size, 4]`` of the agent's heroes in games ``rows`` only.

    ``team`` and ``first`` cover every game of the batch. An agent with an ``act_rows`` method (a policy: its
    forward pass is the cost) computes just those games; any other agent acts in every game (bots read the whole
    game state anyway) and only the rows asked for are kept.
    """
    if len(rows) == len(team):
        return agent.act(env, obs, team, first)
    act_rows = getattr(agent, "act_rows", None)
    if act_rows is not None:
        return act_rows(env, obs, team, first, rows)
    return agent.act(env, obs, team, first)[rows]


def sample_masked(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Uniform index of a True entry along the last axis (0 where a row has none): int64 ``mask.shape[:-1]``."""
    keys = rng.random(mask.shape)
    keys[~mask] = -1.0
    return keys.argmax(axis=-1)


class RandomAgent:
    """Uniform over valid actions: a primary action the masks allow (with a valid unit target if it needs one),
    a uniform delay, a uniform valid target slot if the action takes one and a uniform 9x9 offset if it uses one.
    TrueSkill's zero point."""

    schema_version = None

    def __init__(self, spec: str = "random"):
        self.spec = spec
        self.rng = np.random.default_rng()

    def reset(self, num_games: int, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, env: Any, obs: dict[str, np.ndarray], team: np.ndarray, first: np.ndarray) -> np.ndarray:
        mine = select_team(obs, team, env.team_size)
        action_mask, target_mask, param_mask = mine["action_mask"], mine["target_mask"], mine["param_mask"]
        uses_target, uses_offset = param_mask[..., 0], param_mask[..., 1]  # [G, k, P]
        has_target = target_mask.any(axis=-1)
        primary = sample_masked(action_mask & (~uses_target | has_target), self.rng)  # [G, k]

        pick = primary[..., None]
        chosen_targets = np.take_along_axis(target_mask, pick[..., None], axis=2)[:, :, 0]  # [G, k, T]
        needs_target = np.take_along_axis(uses_target, pick, axis=2)[..., 0]
        needs_offset = np.take_along_axis(uses_offset, pick, axis=2)[..., 0]

        schema = env.schema.action
        actions = np.zeros((*primary.shape, 4), dtype=np.int32)
        actions[..., 0] = primary
        actions[..., 1] = self.rng.integers(0, schema.delays, size=primary.shape)
        actions[..., 2] = np.where(needs_target, sample_masked(chosen_targets, self.rng), 0)
        center = schema.n_offset // 2
        actions[..., 3] = np.where(
            needs_offset, self.rng.integers(0, schema.n_offset, size=primary.shape), center
        )
        return actions


class BotAgent:
    """A scripted bot of ``fivectl.sim.bots`` (``bot:passive|easy|medium``): reads the game state, acts through
    the observation's target slots like a policy. Keeps per-game memory (e.g. retreating) reset by ``first``."""

    schema_version = None

    def __init__(self, spec: str):
        self.spec = spec
        self.level = spec.removeprefix("bot:")
        if self.level not in BOT_LEVELS:
            raise unknown_agent(spec)
        self.rng = np.random.default_rng()
        self.memory: BotMemory | None = None

    def reset(self, num_games: int, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.memory = None  # sized by the env at the first step

    def act(self, env: Any, obs: dict[str, np.ndarray], team: np.ndarray, first: np.ndarray) -> np.ndarray:
        if self.memory is None:
            self.memory = BotMemory.empty(env.num_games, env.team_size)
        self.memory.forget(first)
        return bot_actions(env, obs, team, self.level, self.memory, self.rng)


register_agent_kind("random", "random", RandomAgent, examples=("random",))
register_agent_kind("bot", "bot:", BotAgent, examples=tuple(f"bot:{level}" for level in BOT_LEVELS))


__all__ = [
    "Agent",
    "act_in",
    "AgentKind",
    "BotAgent",
    "RandomAgent",
    "known_agent_specs",
    "parse_agent",
    "register_agent_kind",
    "sample_masked",
    "select_team",
    "team_agent_index",
    "unknown_agent",
]
