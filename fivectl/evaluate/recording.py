"""``evaluate match --record DIR``: every game of a match as a replay file, with what the policies predicted.

The match runner tells a :class:`MatchRecording` which game starts in which slot, hands it each agent's
predictions right after the agent acted (a policy that records keeps the value, win probability and objective
predictions of the forward pass that chose its actions: no extra forward pass), and every env step.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from fivectl.runtime.recorder import GameRecorder, empty_predictions


def slug(agent: Any, limit: int = 40) -> str:
    """An agent as part of a file name: ``bot:easy`` -> ``bot-easy``, a checkpoint ``runs/qs@latest`` (version
    60) -> ``qs-v60``."""
    spec = agent.spec
    if "@" in spec and getattr(agent, "version", None) is not None:
        spec = f"{Path(spec.rpartition('@')[0]).name}-v{agent.version}"
    return re.sub(r"[^A-Za-z0-9]+", "-", spec).strip("-")[-limit:] or "agent"


class MatchRecording:
    """Replays of the games of ``play_matches``: ``roles`` and ``queue`` are the match runner's."""

    def __init__(self, env, directory: str | Path, roles, queue, seed: int):
        self.recorder = GameRecorder(env, directory)
        self.env, self.roles, self.queue, self.seed = env, roles, queue, seed
        self.predictions: dict[str, np.ndarray] | None = None
        for agent in roles.agents:
            if hasattr(agent, "record_predictions"):
                agent.record_predictions = True

    def start(self, slots: np.ndarray, game_ids: np.ndarray) -> None:
        """Record the games ``game_ids`` (global numbers) that start now in ``slots``."""
        names, headers = [], []
        for game in np.asarray(game_ids).tolist():
            match = int(self.queue.match_of[game])
            index = int(self.queue.index_in_match[game])
            a = self.roles.agents[self.roles.a_role[match]]
            b = self.roles.agents[self.roles.b_role[match]]
            by_team = [a, b] if index % 2 == 0 else [b, a]  # game i puts A on team i % 2
            names.append(f"{slug(a)}-vs-{slug(b)}-s{self.seed}-g{index:04d}")
            headers.append(
                {
                    "agents": [agent.spec for agent in by_team],
                    "agent_versions": [_version(agent) for agent in by_team],
                    "match_seed": self.seed,
                    "game_in_match": index,
                }
            )
        self.recorder.start(np.asarray(slots), names, headers)

    def begin_step(self) -> None:
        self.predictions = empty_predictions(self.env.num_games, self.env.agents_per_game)

    def add_predictions(self, agent: Any, columns: np.ndarray) -> None:
        """After ``agent`` acted: its predictions go to heroes ``columns`` [rows, k] of the slots it decided in
        (``agent.predictions["rows"]``, an index into the slots it was asked to act in)."""
        made = getattr(agent, "predictions", None)
        if made is None or self.predictions is None:
            return
        slots, heroes = made["slots"], columns[made["rows"]]
        for name in ("value", "win_prob", "objectives"):
            self.predictions[name][slots[:, None], heroes] = made[name]

    def step(self, actions: np.ndarray, done: np.ndarray, info: dict) -> list[Path]:
        return self.recorder.step(actions, done, info, self.predictions)

    def close(self) -> None:
        self.recorder.close()


def _version(agent: Any) -> int | None:
    version = getattr(agent, "version", None)
    return int(version) if version is not None else None
