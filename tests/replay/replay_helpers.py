"""Helpers: short games of the embedded MOBA recorded with ``GameRecorder`` (random agents, and predictions made
up so that the recorded values are known), played once per test session."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fivectl.config import GameConfig
from fivectl.runtime.recorder import GameRecorder, capture_frame, empty_predictions
from fivectl.schema import load_schema

GAME = GameConfig(team_size=1, lanes=1, time_limit_s=20.0)
SLOTS = 2
GAMES = 4  # two per slot: the second game of a slot starts from the state the first left behind


def made_up_predictions(step: int, slots: int, heroes: int) -> dict[str, np.ndarray]:
    """Known predictions that change every step; on odd steps nobody predicts (a policy holding its orders), so
    the recorder must carry the last prediction over."""
    pred = empty_predictions(slots, heroes)
    if step % 2 == 0:
        base = np.arange(slots)[:, None] * 0.01 + np.arange(heroes)[None, :] * 0.1
        pred["win_prob"][:] = (0.2 + 0.6 * ((step * 0.37) % 1.0) + base).clip(0, 1)
        pred["value"][:] = step / 100.0 + base
        pred["objectives"][:, :, 0] = 0.25
        pred["objectives"][:, :, 5] = (step % 7) / 7.0
    return pred


@dataclass
class Recorded:
    directory: Path
    files: list[Path]
    first_frames: list[dict] = field(default_factory=list)  # capture_frame of each game's start, by file
    actions: list[np.ndarray] = field(default_factory=list)  # [steps, heroes, 4] sent to the game, by file
    win_prob: list[np.ndarray] = field(default_factory=list)  # the prediction in force at each step, by file
    winners: list[int] = field(default_factory=list)


def record_games(directory: Path, seed: int = 5, change: tuple[str, float] | None = None) -> Recorded:
    """``change``: (name, fraction) of an environment change the games draw with (``MobaEnv.set_change``)."""
    from fivectl.sim import MobaEnv

    env = MobaEnv(GAME, SLOTS, seed, load_schema(2))
    if change is not None:
        env.set_change(*change)
    rng = np.random.default_rng(seed)
    env.reset()
    recorder = GameRecorder(env, directory, chunk=40)  # several chunks per game
    out = Recorded(directory, [])
    playing: dict[int, int] = {}  # slot -> index of its game in ``out``
    started = 0

    def start(slots: list[int]) -> None:
        nonlocal started
        names = [f"game-{started + i:03d}" for i in range(len(slots))]
        recorder.start(slots, names, [{"agents": ["random", "random"]}] * len(slots))
        for i, slot in enumerate(slots):
            playing[slot] = started + i
            out.first_frames.append(
                {
                    k: v[0]
                    for k, v in capture_frame(
                        env.core_state, env.state, np.array([slot]), env.layout.n_units
                    ).items()
                }
            )
            out.actions.append([])
            out.win_prob.append([])
            out.files.append(directory / f"{names[i]}.arrow")
            out.winners.append(-9)
        started += len(slots)

    start(list(range(SLOTS)))
    last_wp = np.full((SLOTS, env.agents_per_game), np.nan, np.float32)
    step = 0
    while any(slot in playing for slot in range(SLOTS)):
        actions = env.sample_random_actions(rng)
        pred = made_up_predictions(step, SLOTS, env.agents_per_game)
        last_wp = np.where(np.isnan(pred["win_prob"]), last_wp, pred["win_prob"])
        for slot, game in playing.items():
            out.actions[game].append(actions[slot].copy())
            out.win_prob[game].append(last_wp[slot].copy())
        _, _, done, info = env.step(actions)
        recorder.step(actions, done, info, pred)
        ended = [slot for slot in np.flatnonzero(done).tolist() if slot in playing]
        for slot in ended:
            out.winners[playing.pop(slot)] = int(info["winner"][slot])
            last_wp[slot] = np.nan
        if ended and started < GAMES:
            start(ended[: GAMES - started])
        step += 1
    out.actions = [np.array(a) for a in out.actions]
    out.win_prob = [np.array(w) for w in out.win_prob]
    return out
