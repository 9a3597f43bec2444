"""Spread the start times of a worker's games over one game length.

A worker's games all start when it starts, and in the embedded game most of them last exactly to the time
limit, so without this they stay in step forever: every fragment, and so every learner batch, comes from one
moment of the game, and all the win/loss rewards land in the same batch. The learner then sees the early game
for a while, then the late game, and its value loss is about 50 times higher on the batches of game ends
(benchmarks/RESULTS.md, "every learner batch came from one moment of the game", 2026-11-24). Spreading the games, as many independent actors would, makes each batch a
mix of all moments of the game.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fivectl.sim import BotMemory, bot_actions

WARM_UP_BOT = "easy"
"""The scripted bot that plays both sides of a game until the policy takes it over."""


def game_steps(env: Any) -> int:
    """Decisions in a game that reaches the time limit."""
    return int(env.params.time_limit_ticks // env.params.frameskip)


def game_ages(num_games: int, phases: int, steps: int, rng: np.random.Generator) -> np.ndarray:
    """Steps already played in each game when the policy takes over: ``phases`` groups of games (in slot order)
    evenly spaced over a game of ``steps`` decisions, all shifted by one random offset."""
    phases = max(1, min(phases, num_games))
    spacing = steps // phases
    if phases == 1 or spacing == 0:
        return np.zeros(num_games, dtype=np.int64)
    group = np.arange(num_games) * phases // num_games
    return int(rng.integers(0, spacing)) + group * spacing


def stagger_game_starts(
    env: Any, obs: dict[str, np.ndarray], phases: int, rng: np.random.Generator
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Age ``env``'s freshly reset games to :func:`game_ages`, with scripted bots playing both sides meanwhile.

    Game ``g`` is restarted ``ages.max() - ages[g]`` steps into the warm-up, so when it ends every game has been
    played for its age. Returns the observation and ``joined`` (bool [G]): the games the policy takes over midway,
    whose results should not be counted as its own.
    """
    G, k = env.num_games, env.team_size
    ages = game_ages(G, phases, game_steps(env), rng)
    start = ages.max() - ages
    memories = [BotMemory.empty(G, k) for _ in (0, 1)]
    actions = np.zeros((G, 2 * k, 4), dtype=np.int32)
    for step in range(int(ages.max()) + 1):
        restart = start == step
        if step > 0 and restart.any():
            obs = env.restart(restart)
            for memory in memories:
                memory.forget(restart)
        if step == ages.max():
            break
        for team in (0, 1):
            side = np.full(G, team, dtype=np.int64)
            actions[:, team * k : (team + 1) * k] = bot_actions(
                env, obs, side, WARM_UP_BOT, memories[team], rng
            )
        obs, _, done, _ = env.step(actions)
        for memory in memories:
            memory.forget(done)
    return obs, ages > 0
